"""All proxies of a server, keyed by name, with Toxiproxy's create/replace/populate rules."""

from __future__ import annotations

import asyncio
from typing import Any

from grpc_resilience_mesh.embedded_toxiproxy.addresses import require_loopback
from grpc_resilience_mesh.embedded_toxiproxy.decoding import (
    check_name_length,
    expect_object,
    get_bool,
    get_str,
    json_kind,
)
from grpc_resilience_mesh.embedded_toxiproxy.errors import (
    BAD_REQUEST_BODY,
    MISSING_FIELD,
    PROXY_ALREADY_EXISTS,
    PROXY_NOT_FOUND,
    ApiError,
)
from grpc_resilience_mesh.embedded_toxiproxy.proxy import Proxy, ProxyAlreadyStartedError

_PROXY = "toxiproxy.Proxy"
_PROXY_STRUCT = "Proxy"  # Go names a struct field's type without its package
_POPULATE = "[]struct { toxiproxy.Proxy; Enabled *bool }"


class ProxyCollection:
    """Guards proxy names; one lock serialises changes since starting a proxy awaits.

    Unless `allow_non_loopback`, a proxy may only listen on loopback, checked before it is
    created or changed (even disabled) and again whenever it binds.
    """

    def __init__(self, allow_non_loopback: bool = False) -> None:
        self._proxies: dict[str, Proxy] = {}
        self.lock = asyncio.Lock()
        self.allow_non_loopback = allow_non_loopback

    async def _check_listen(self, listen: str) -> None:
        if not self.allow_non_loopback:
            await require_loopback(listen)

    def _new_proxy(self, name: str, listen: str, upstream: str) -> Proxy:
        return Proxy(name, listen, upstream, self.allow_non_loopback)

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
        name = get_str(obj, "name", _PROXY_STRUCT, "")
        listen = get_str(obj, "listen", _PROXY_STRUCT, "")
        upstream = get_str(obj, "upstream", _PROXY_STRUCT, "")
        enabled = get_bool(obj, "enabled", _PROXY_STRUCT, True)
        if not name:
            raise MISSING_FIELD.joined("name")
        if not upstream:
            raise MISSING_FIELD.joined("upstream")
        check_name_length(name, "proxy name")
        await self._check_listen(listen)
        async with self.lock:
            if name in self._proxies:
                raise PROXY_ALREADY_EXISTS
            proxy = self._new_proxy(name, listen, upstream)
            if enabled:
                await proxy.start()
            self._proxies[name] = proxy
        return proxy

    async def update_json(self, name: str, body: Any) -> Proxy:
        """PATCH (or legacy POST) /proxies/{name}: missing fields keep their current value."""
        async with self.lock:
            proxy = self.get(name)
            obj = expect_object(body, _PROXY)
            listen = get_str(obj, "listen", _PROXY_STRUCT, proxy.listen)
            upstream = get_str(obj, "upstream", _PROXY_STRUCT, proxy.upstream)
            enabled = get_bool(obj, "enabled", _PROXY_STRUCT, proxy.enabled)
            # Checked first, so a refused address leaves the proxy as it was.
            await self._check_listen(listen)
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
            name = get_str(obj, "name", _PROXY_STRUCT, "")
            listen = get_str(obj, "listen", _PROXY_STRUCT, "")
            upstream = get_str(obj, "upstream", _PROXY_STRUCT, "")
            enabled = get_bool(obj, "enabled", _PROXY_STRUCT, True)
            # Everything is validated before any proxy is created, as in Toxiproxy.
            if not name:
                raise MISSING_FIELD.joined(f"name at proxy {index}")
            if not upstream:
                raise MISSING_FIELD.joined(f"upstream at proxy {index}")
            check_name_length(name, f"proxy name at proxy {index}")
            await self._check_listen(listen)
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
        proxy = self._new_proxy(name, listen, upstream)
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
