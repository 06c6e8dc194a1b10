"""The console's HTTP surface on aiohttp: static files and the JSON API, mapped onto `Console`.

Requests must name a loopback Host (no DNS rebinding); every API call must carry the console's
per-run token (grpc_resilience_mesh.console.auth), and every change (POST) also `X-Mesh-Console: 1`,
headers a page of another origin cannot send without a preflight this server never grants. The
Console's methods block (they scrape and call admin ports), so they run on a bounded pool of
threads, never on the loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.parse
from collections.abc import Callable
from concurrent.futures import Executor
from http import HTTPStatus
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web

from grpc_resilience_mesh.console.auth import ConsoleToken
from grpc_resilience_mesh.console.bounded_http import HttpLimits

log = logging.getLogger("grpc_resilience_mesh.console")


class Api(Protocol):
    """What the routes map the JSON API onto (grpc_resilience_mesh.console.server.Console): blocking
    calls, run on the bounded pool."""

    def get(self, path: str, query: dict[str, str]) -> Any: ...
    def post(self, path: str, body: dict[str, Any]) -> Any: ...


STATIC = ("index.html", "console.js", "console.css")
MAX_BODY = 64 * 1024
CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}


class BadRequest(Exception):
    """The request is wrong: answered 400 with the message."""


def _send(status: int, body: bytes, content_type: str) -> web.Response:
    headers = {
        "Content-Type": content_type,
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        "Server": "mesh-console",
    }
    return web.Response(status=status, body=body, headers=headers)


def _json(status: int, payload: Any) -> web.Response:
    return _send(status, json.dumps(payload).encode(), "application/json")


class ConsoleRoutes:
    """One aiohttp handler for every path; `port()` names the Host a request must carry."""

    def __init__(
        self,
        console: Api,
        port: Callable[[], int],
        pool: Executor,
        limits: HttpLimits,
        token: ConsoleToken,
    ) -> None:
        self._console = console
        self._token = token
        self._port = port
        self._pool = pool
        self._limits = limits

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        return app

    def _host_ok(self, request: web.Request) -> bool:
        host = (request.headers.get("Host") or "").lower()
        return host in {f"127.0.0.1:{self._port()}", f"localhost:{self._port()}"}

    async def _dispatch(self, request: web.Request) -> web.Response:
        if request.method in ("GET", "HEAD"):
            return await self._get(request)
        if request.method == "POST":
            return await self._post(request)
        return _json(HTTPStatus.NOT_IMPLEMENTED, {"error": f"unsupported method {request.method}"})

    async def _answer(self, work: Callable[[], Any]) -> web.Response:
        try:
            result = await asyncio.get_running_loop().run_in_executor(self._pool, work)
            return _json(HTTPStatus.OK, result)
        except BadRequest as err:
            return _json(HTTPStatus.BAD_REQUEST, {"error": str(err)})
        except LookupError as err:
            return _json(HTTPStatus.NOT_FOUND, {"error": f"not found: {err}"})
        except Exception as err:  # a console error must never take mesh up down
            log.exception("console request failed")
            return _json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": type(err).__name__})

    async def _get(self, request: web.Request) -> web.Response:
        if not self._host_ok(request):
            return _json(HTTPStatus.FORBIDDEN, {"error": "use 127.0.0.1 or localhost"})
        url = urllib.parse.urlsplit(request.raw_path)
        name = "index.html" if url.path == "/" else url.path.removeprefix("/static/")
        if name in STATIC:
            body = (
                resources.files("grpc_resilience_mesh.console")
                .joinpath("static", name)
                .read_bytes()
            )
            return _send(HTTPStatus.OK, body, CONTENT_TYPES[Path(name).suffix])
        if (refused := self._token.refuse(request.headers.get("Authorization"))) is not None:
            return _json(HTTPStatus.UNAUTHORIZED, refused)
        query = dict(urllib.parse.parse_qsl(url.query))
        return await self._answer(lambda: self._console.get(url.path, query))

    async def _post(self, request: web.Request) -> web.Response:
        if not self._host_ok(request) or request.headers.get("X-Mesh-Console") != "1":
            return _json(HTTPStatus.FORBIDDEN, {"error": "changes need X-Mesh-Console: 1"})
        if (refused := self._token.refuse(request.headers.get("Authorization"))) is not None:
            return _json(HTTPStatus.UNAUTHORIZED, refused)
        if (request.content_length or 0) > MAX_BODY:
            return _json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": "body too large"})
        try:
            async with asyncio.timeout(self._limits.body_timeout_s):
                raw = await request.read()
        except TimeoutError:
            slow = _json(HTTPStatus.REQUEST_TIMEOUT, {"error": "the body came too slowly"})
            slow.force_close()
            return slow
        except web.HTTPRequestEntityTooLarge:
            return _json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": "body too large"})
        path = urllib.parse.urlsplit(request.raw_path).path

        def work() -> Any:
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                raise BadRequest("the body is not JSON") from None
            if not isinstance(body, dict):
                raise BadRequest("the body is a JSON object")
            return self._console.post(path, body)

        return await self._answer(work)
