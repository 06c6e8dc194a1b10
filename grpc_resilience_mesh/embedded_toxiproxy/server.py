"""The embedded Toxiproxy server: HTTP API plus proxies, run on the current asyncio loop."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import logging
import os
import signal
import socket
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from aiohttp import web

from grpc_resilience_mesh.embedded_toxiproxy.api import ToxiproxyApi
from grpc_resilience_mesh.embedded_toxiproxy.api_token import TOKEN_ENV, token_from_env
from grpc_resilience_mesh.embedded_toxiproxy.errors import ApiError
from grpc_resilience_mesh.embedded_toxiproxy.json_reader import parse_body
from grpc_resilience_mesh.embedded_toxiproxy.leases import LeaseTable
from grpc_resilience_mesh.embedded_toxiproxy.proxy_collection import ProxyCollection

log = logging.getLogger(__name__)


class ToxiproxyServer:
    """Toxiproxy-compatible server; the admin API binds 127.0.0.1 unless told otherwise.

    Proxies may only listen on loopback unless `allow_non_loopback` (unlike Toxiproxy). With a
    `token`, API requests must carry it (grpc_resilience_mesh.embedded_toxiproxy.api_token);
    without, it is open.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 8474,
        *,
        allow_non_loopback: bool = False,
        token: str | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.token = token
        self.proxies = ProxyCollection(allow_non_loopback)
        self.leases = LeaseTable(self.proxies)
        self._expiry: asyncio.Task[None] | None = None
        self._runner: web.AppRunner | None = None
        self._api_port: int | None = None

    @property
    def api_port(self) -> int:
        if self._api_port is None:
            raise RuntimeError("ToxiproxyServer is not started")
        return self._api_port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.api_port}"

    async def start(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.create_server((self.host, self.port), family=family)
        self._api_port = int(sock.getsockname()[1])
        # A short shutdown timeout: API requests are tiny, and stop() must not stall tests.
        api = ToxiproxyApi(self.proxies, self.token, self.leases)
        runner = web.AppRunner(api.app(), access_log=None, shutdown_timeout=0.1)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        self._runner = runner
        self._expiry = asyncio.create_task(self.leases.run_expiry(), name="toxiproxy-leases")
        log.info("toxiproxy API listening on %s:%d", self.host, self._api_port)

    async def stop(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._expiry
            self._expiry = None
        await self.proxies.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def populate(self, proxies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Same rules as POST /populate; raises ApiError if a proxy cannot be created."""
        created, error = await self.proxies.populate_json(proxies)
        if error is not None:
            raise error
        return [proxy.to_json() for proxy in created]

    async def __aenter__(self) -> ToxiproxyServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


async def serve_forever(
    host: str,
    port: int,
    config_path: str | None = None,
    *,
    allow_non_loopback: bool = False,
    token: str | None = None,
) -> None:
    """Run until SIGINT or SIGTERM; `config_path` is a JSON list of proxies, like -config;
    `token`, if any, is the API's (grpc_resilience_mesh.embedded_toxiproxy.api_token)."""
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopped.set)
    server = ToxiproxyServer(host, port, allow_non_loopback=allow_non_loopback, token=token)
    async with server:
        if config_path is not None:
            # Like Toxiproxy, a bad config file is logged and the server keeps running.
            try:
                raw = await asyncio.to_thread(Path(config_path).read_bytes)
                created = await server.populate(parse_body(raw))
                log.info("populated %d proxies from %s", len(created), config_path)
            except (OSError, ApiError) as exc:
                log.error("failed to populate proxies from %s: %s", config_path, exc)
        auth = f" (token required: {TOKEN_ENV})" if token else ""
        print(f"toxiproxy API on http://{host}:{server.api_port}{auth}", flush=True)
        await stopped.wait()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.remove_signal_handler(signum)


LOOP_ENV = "MESH_PROXY_LOOP"
"""`asyncio` runs the proxy process on the standard library's loop instead of uvloop."""


def proxy_loop(environ: Mapping[str, str] = os.environ) -> str:
    """The event loop the proxy process runs on: `uvloop` when it is installed (libuv moves
    the bytes; only the relay's own Python is left per chunk), else `asyncio`. Every byte of
    every hop crosses this process twice, so its loop is a cost each request pays (issue 15;
    docs/results/mesh-cpu.md). MESH_PROXY_LOOP=asyncio forces the standard library's loop."""
    choice = environ.get(LOOP_ENV, "uvloop")
    if choice not in ("uvloop", "asyncio"):
        raise ValueError(f"{LOOP_ENV}={choice!r}: expected uvloop or asyncio")
    if choice == "uvloop" and importlib.util.find_spec("uvloop") is None:
        return "asyncio"
    return choice


def run_loop(main: Coroutine[Any, Any, None], loop: str) -> None:
    """Runs `main` to completion on `loop` (what proxy_loop chose)."""
    if loop == "uvloop":
        import uvloop

        uvloop.run(main)
    else:
        asyncio.run(main)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Toxiproxy-compatible server",
        epilog=f"{TOKEN_ENV}=TOKEN: API requests (but GET /version) must send "
        "`Authorization: Bearer TOKEN`, or get 401. Unset (the default): open, as Toxiproxy.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="API host (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8474, help="API port (default 8474)")
    parser.add_argument("--config", default=None, help="JSON list of proxies to populate")
    parser.add_argument(
        "--allow-non-loopback",
        action="store_true",
        help="let proxies listen beyond 127.0.0.1/::1 (refused by default, unlike Toxiproxy)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        loop = proxy_loop()
    except ValueError as err:
        parser.error(str(err))
    run_loop(
        serve_forever(
            args.host,
            args.port,
            args.config,
            allow_non_loopback=args.allow_non_loopback,
            token=token_from_env(),
        ),
        loop,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
