"""Toxiproxy 2.12's HTTP API on aiohttp: same routes, status codes, JSON shapes and errors."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from grpc_resilience_mesh.embedded_toxiproxy.api_token import token_gate
from grpc_resilience_mesh.embedded_toxiproxy.errors import ApiError, internal
from grpc_resilience_mesh.embedded_toxiproxy.json_reader import parse_body
from grpc_resilience_mesh.embedded_toxiproxy.leases import LeaseTable
from grpc_resilience_mesh.embedded_toxiproxy.proxy_collection import ProxyCollection

log = logging.getLogger(__name__)

VERSION = "2.12.0"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# Larger bodies are decoded on a worker thread: a hostile 1 MiB body can keep the pure-Python
# reader busy for seconds, and this loop relays every proxied connection meanwhile.
_THREAD_BODY_BYTES = 64 * 1024


def _json(data: Any, status: int = 200) -> web.Response:
    # allow_nan=False: a value that is not JSON (NaN, Infinity) is a 500, never a bare `NaN`.
    body = json.dumps(data, separators=(",", ":"), allow_nan=False).encode()
    return web.Response(body=body, status=status, headers={"Content-Type": "application/json"})


def _plain(text: str, status: int) -> web.Response:
    # Go's http.Error: text/plain, nosniff, and a trailing newline.
    headers = {"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"}
    return web.Response(body=text.encode(), status=status, headers=headers)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.headers.get("User-Agent", "").startswith("Mozilla/"):
        # Toxiproxy refuses browsers so that a web page cannot drive it (CSRF).
        return _plain("User agent not allowed\n", 403)
    try:
        return await handler(request)
    except ApiError as exc:
        return _plain(exc.body(), exc.status)
    except web.HTTPRequestEntityTooLarge:
        # aiohttp's 1 MiB cap (Toxiproxy has none): Go's MaxBytesReader wording, our error shape.
        error = ApiError("bad request body: http: request body too large", 413)
        return _plain(error.body(), error.status)
    except web.HTTPNotFound:
        return _plain("404 page not found\n", 404)
    except web.HTTPMethodNotAllowed:
        return web.Response(status=405)
    except web.HTTPException:
        raise
    except Exception as exc:
        log.exception("toxiproxy API handler failed")
        error = internal(str(exc) or type(exc).__name__)
        return _plain(error.body(), error.status)


async def _body(request: web.Request) -> Any:
    raw = await request.read()
    if len(raw) > _THREAD_BODY_BYTES:
        return await asyncio.to_thread(parse_body, raw)
    return parse_body(raw)


class ToxiproxyApi:
    """Request handlers over one ProxyCollection (and its fault leases, our extension)."""

    def __init__(
        self, proxies: ProxyCollection, token: str | None = None, leases: LeaseTable | None = None
    ) -> None:
        self.proxies = proxies
        self.token = token
        self.leases = leases or LeaseTable(proxies)

    def app(self) -> web.Application:
        gate = [token_gate(self.token)] if self.token else []
        app = web.Application(middlewares=[_errors, *gate])
        r = app.router
        r.add_post("/reset", self.reset)
        r.add_get("/proxies", self.proxy_index, allow_head=False)
        r.add_post("/proxies", self.proxy_create)
        r.add_post("/populate", self.populate)
        r.add_get("/proxies/{proxy}", self.proxy_show, allow_head=False)
        r.add_post("/proxies/{proxy}", self.proxy_update)
        r.add_patch("/proxies/{proxy}", self.proxy_update)
        r.add_delete("/proxies/{proxy}", self.proxy_delete)
        r.add_get("/proxies/{proxy}/toxics", self.toxic_index, allow_head=False)
        r.add_post("/proxies/{proxy}/toxics", self.toxic_create)
        r.add_get("/proxies/{proxy}/toxics/{toxic}", self.toxic_show, allow_head=False)
        r.add_post("/proxies/{proxy}/toxics/{toxic}", self.toxic_update)
        r.add_patch("/proxies/{proxy}/toxics/{toxic}", self.toxic_update)
        r.add_delete("/proxies/{proxy}/toxics/{toxic}", self.toxic_delete)
        r.add_get("/version", self.version, allow_head=False)
        r.add_get("/leases", self.lease_index, allow_head=False)
        r.add_put("/leases/{lease}", self.lease_renew)
        r.add_delete("/leases/{lease}", self.lease_delete)
        return app

    async def reset(self, request: web.Request) -> web.Response:
        await self.proxies.reset()
        return web.Response(status=204)

    async def proxy_index(self, request: web.Request) -> web.Response:
        return _json({p.name: p.to_json() for p in self.proxies.all()})

    async def proxy_create(self, request: web.Request) -> web.Response:
        proxy = await self.proxies.create_json(await _body(request))
        return _json(proxy.to_json(), 201)

    async def populate(self, request: web.Request) -> web.Response:
        try:
            body = await _body(request)
            created, error = await self.proxies.populate_json(body)
        except ApiError as exc:
            created, error = [], exc
        # Go embeds the error next to the proxies and marshals an empty slice as null.
        data: dict[str, Any] = error.to_json() if error is not None else {}
        data["proxies"] = [p.to_json() for p in created] or None
        return _json(data, error.status if error is not None else 201)

    async def proxy_show(self, request: web.Request) -> web.Response:
        return _json(self.proxies.get(request.match_info["proxy"]).to_json())

    async def proxy_update(self, request: web.Request) -> web.Response:
        name = request.match_info["proxy"]
        self.proxies.get(name)
        proxy = await self.proxies.update_json(name, await _body(request))
        return _json(proxy.to_json())

    async def proxy_delete(self, request: web.Request) -> web.Response:
        await self.proxies.remove(request.match_info["proxy"])
        return web.Response(status=204)

    async def toxic_index(self, request: web.Request) -> web.Response:
        proxy = self.proxies.get(request.match_info["proxy"])
        return _json([toxic.to_json() for toxic in proxy.toxics.all()])

    async def toxic_create(self, request: web.Request) -> web.Response:
        proxy = self.proxies.get(request.match_info["proxy"])
        toxic = proxy.toxics.add_json(await _body(request))
        # Toxiproxy answers 200, not 201, for a new toxic.
        return _json(toxic.to_json())

    async def toxic_show(self, request: web.Request) -> web.Response:
        proxy = self.proxies.get(request.match_info["proxy"])
        return _json(proxy.toxics.get(request.match_info["toxic"]).to_json())

    async def toxic_update(self, request: web.Request) -> web.Response:
        proxy = self.proxies.get(request.match_info["proxy"])
        name = request.match_info["toxic"]
        proxy.toxics.get(name)
        toxic = proxy.toxics.update_json(name, await _body(request))
        return _json(toxic.to_json())

    async def toxic_delete(self, request: web.Request) -> web.Response:
        proxy = self.proxies.get(request.match_info["proxy"])
        proxy.toxics.remove(request.match_info["toxic"])
        return web.Response(status=204)

    async def lease_index(self, request: web.Request) -> web.Response:
        return _json(self.leases.all_json())

    async def lease_renew(self, request: web.Request) -> web.Response:
        body = await _body(request)
        lease, created = self.leases.renew_json(request.match_info["lease"], body)
        return _json(lease, 201 if created else 200)

    async def lease_delete(self, request: web.Request) -> web.Response:
        self.leases.remove(request.match_info["lease"])
        return web.Response(status=204)

    async def version(self, request: web.Request) -> web.Response:
        # Byte for byte what Toxiproxy >= 2.7 sends (it was invalid JSON before 2.7).
        body = f'{{"version": "{VERSION}"}}\n'.encode()
        headers = {"Content-Type": "application/json;charset=utf-8"}
        return web.Response(body=body, headers=headers)
