"""All proxies of a server, keyed by name, with Toxiproxy's create/replace/populate rules."""

from __future__ import annotations

import asyncio
from typing import Any

from chaos.toxiproxy.decoding import expect_object, get_bool, get_str, json_kind
from chaos.toxiproxy.errors import (
    BAD_REQUEST_BODY,
    MISSING_FIELD,
    PROXY_ALREADY_EXISTS,
    PROXY_NOT_FOUND,
    ApiError,
)
from chaos.toxiproxy.proxy import Proxy, ProxyAlreadyStartedError

_PROXY = "toxiproxy.Proxy"
_POPULATE = "[]struct { toxiproxy.Proxy; Enabled *bool }"


class ProxyCollection:
    """Guards proxy names; one lock serialises changes since starting a proxy awaits."""

    def __init__(self) -> None:
        self._proxies: dict[str, Proxy] = {}
        self.lock = asyncio.Lock()

    def all(self) -> list[Proxy]:
        return list(self._proxies.values())

    def get(self, name: str) -> Proxy:
        proxy = self._proxies.get(name)
        if proxy is None:
            raise PROXY_NOT_FOUND
        return proxy

    async def create_json(self, body: Any) -> Proxy:
        """POST /proxies: a new proxy, enabled unless `enabled: false`."""
        obj = expect_object(body, _PROXY)
        name = get_str(obj, "name", _PROXY, "")
        listen = get_str(obj, "listen", _PROXY, "")
        upstream = get_str(obj, "upstream", _PROXY, "")
        enabled = get_bool(obj, "enabled", _PROXY, True)
        if not name:
            raise MISSING_FIELD.joined("name")
        if not upstream:
            raise MISSING_FIELD.joined("upstream")
        async with self.lock:
            if name in self._proxies:
                raise PROXY_ALREADY_EXISTS
            proxy = Proxy(name, listen, upstream)
            if enabled:
                await proxy.start()
            self._proxies[name] = proxy
        return proxy

    async def update_json(self, name: str, body: Any) -> Proxy:
        """PATCH (or legacy POST) /proxies/{name}: missing fields keep their current value."""
        async with self.lock:
            proxy = self.get(name)
            obj = expect_object(body, _PROXY)
            listen = get_str(obj, "listen", _PROXY, proxy.listen)
            upstream = get_str(obj, "upstream", _PROXY, proxy.upstream)
            enabled = get_bool(obj, "enabled", _PROXY, proxy.enabled)
            await proxy.update(listen, upstream, enabled)
        return proxy

    async def populate_json(self, body: Any) -> tuple[list[Proxy], ApiError | None]:
        """POST /populate: create new proxies, keep unchanged ones, replace changed ones."""
        if not isinstance(body, list):
            raise BAD_REQUEST_BODY.joined(
                f"json: cannot unmarshal {json_kind(body)} into Go value of type {_POPULATE}"
            )
        specs: list[tuple[str, str, str, bool]] = []
        for index, item in enumerate(body, start=1):
            obj = expect_object(item, _PROXY)
            name = get_str(obj, "name", _PROXY, "")
            listen = get_str(obj, "listen", _PROXY, "")
            upstream = get_str(obj, "upstream", _PROXY, "")
            enabled = get_bool(obj, "enabled", _PROXY, True)
            # Everything is validated before any proxy is created, as in Toxiproxy.
            if not name:
                raise MISSING_FIELD.joined(f"name at proxy {index}")
            if not upstream:
                raise MISSING_FIELD.joined(f"upstream at proxy {index}")
            specs.append((name, listen, upstream, enabled))
        result: list[Proxy] = []
        async with self.lock:
            for name, listen, upstream, enabled in specs:
                try:
                    result.append(await self._add_or_replace(name, listen, upstream, enabled))
                except ApiError as exc:
                    return result, exc
        return result, None

    async def _add_or_replace(self, name: str, listen: str, upstream: str, enabled: bool) -> Proxy:
        existing = self._proxies.get(name)
        if existing is not None:
            if not await existing.differs(listen, upstream):
                return existing
            # A replaced proxy starts afresh, without the old one's toxics (as in Toxiproxy).
            existing.stop()
        proxy = Proxy(name, listen, upstream)
        if enabled:
            await proxy.start()
        self._proxies[name] = proxy
        return proxy

    async def remove(self, name: str) -> None:
        async with self.lock:
            proxy = self.get(name)
            proxy.stop()
            del self._proxies[name]

    async def reset(self) -> None:
        """POST /reset: every proxy enabled, every toxic removed."""
        async with self.lock:
            for proxy in self.all():
                try:
                    await proxy.start()
                except ProxyAlreadyStartedError:
                    pass
                proxy.toxics.reset()

    async def clear(self) -> None:
        async with self.lock:
            for proxy in self.all():
                proxy.stop()
                proxy.toxics.reset()
            self._proxies.clear()
