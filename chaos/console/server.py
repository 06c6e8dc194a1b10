"""The console's HTTP server: static files and a small JSON API on 127.0.0.1, in a thread.

Nothing is computed unless a page asks: `/api/state` scrapes the services at most once per
`min_interval_s`, however many pages poll it, so a console nobody looks at costs the mesh
nothing. Requests must name a loopback Host (no DNS rebinding); every API call must carry the
console's per-run token (chaos.console.auth), and every change (POST) also `X-Mesh-Console: 1`,
headers a page of another origin cannot send without a preflight this server never grants.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from chaos.console import reports, trace_view
from chaos.console.auth import ConsoleToken
from chaos.console.background_load import BackgroundLoad, LoadSettings
from chaos.console.faults import FaultError
from chaos.console.view import MeshView
from chaos.launch.state import MeshState

log = logging.getLogger("chaos.console")
STATIC = ("index.html", "console.js", "console.css")
MAX_BODY = 64 * 1024
CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}


class BadRequest(Exception):
    """The request is wrong: answered 400 with the message."""


class Console:
    """What the API does, independent of HTTP (the handler only parses and answers)."""

    def __init__(
        self,
        state: MeshState,
        jaeger_ui: str | None = None,
        reports_dir: Path = Path("reports"),
        min_interval_s: float = 0.8,
    ) -> None:
        self.view = MeshView(state)
        self.load = BackgroundLoad(state.gateway, state.api_key)
        self.jaeger_ui = jaeger_ui.rstrip("/") if jaeger_ui else None
        self.reports_dir = reports_dir
        # This mesh's traces, then those of experiments run on their own mesh (`mesh chaos
        # run` keeps its state in var/chaos by default, beside `mesh up`'s var).
        self.traces_dirs = (
            Path(state.state_dir) / "traces",
            Path(state.state_dir) / "chaos" / "traces",
        )
        self._min_interval_s = min_interval_s
        self._cached: dict[str, Any] | None = None
        self._cached_at = 0.0
        self._lock = threading.Lock()

    def close(self) -> None:
        self.load.stop()
        self.view.close()

    def state(self) -> dict[str, Any]:
        with self._lock:
            if self._cached is None or time.monotonic() - self._cached_at >= self._min_interval_s:
                self._cached = self.view.snapshot()
                self._cached_at = time.monotonic()
            snap = dict(self._cached)
        snap["load"] = self.load.status()
        snap["jaeger_ui"] = self.jaeger_ui
        return snap

    def changed(self) -> None:
        """A control acted: the next poll scrapes afresh."""
        with self._lock:
            self._cached = None
            self.view.faults_changed()

    def post(self, path: str, body: dict[str, Any]) -> Any:
        faults = self.view.faults
        try:
            if path == "/api/toxics":
                toxic = faults.add_toxic(
                    _str(body, "edge"),
                    _str(body, "type"),
                    {k: int(v) for k, v in dict(body.get("attributes") or {}).items()},
                    stream=str(body.get("stream") or "downstream"),
                    toxicity=float(body.get("toxicity", 1.0)),
                )
                return {"toxic": toxic.__dict__}
            if path == "/api/toxics/delete":
                faults.remove_toxic(_str(body, "edge"), _str(body, "name"))
                return {"ok": True}
            if path == "/api/proxy":
                faults.set_enabled(_str(body, "edge"), bool(body.get("enabled")))
                return {"ok": True}
            if path == "/api/faults":
                fault = faults.set_app_fault(
                    _str(body, "service"),
                    _str(body, "method"),
                    error_rate=float(body.get("error_rate", 1.0)),
                    code=str(body.get("code") or "UNAVAILABLE"),
                    delay_s=float(body.get("delay_s", 0.0)),
                    pushback_ms=int(body.get("pushback_ms", -1)),
                )
                return {"fault": fault.__dict__}
            if path == "/api/faults/delete":
                faults.clear_app_fault(_str(body, "service"), _str(body, "method"))
                return {"ok": True}
            if path == "/api/reset":
                return {"missed": faults.reset()}
            if path == "/api/load":
                self.load.start(
                    LoadSettings(
                        float(body.get("rate_per_s", 10)),
                        int(body.get("home", 1)),
                        int(body.get("checkout", 0)),
                    )
                )
                return self.load.status()
            if path == "/api/load/stop":
                self.load.stop()
                return self.load.status()
        except FaultError as err:
            raise BadRequest(str(err)) from None
        except (TypeError, ValueError) as err:
            raise BadRequest(str(err)) from None
        finally:
            self.changed()
        raise LookupError(path)

    def get(self, path: str, query: dict[str, str]) -> Any:
        if path == "/api/state":
            return self.state()
        if path == "/api/traces":
            kind = query.get("filter", "all")
            if kind not in trace_view.FILTERS:
                raise BadRequest(f"filter must be one of {', '.join(trace_view.FILTERS)}")
            found = trace_view.load_recent(self.traces_dirs[0])
            return {
                "traces": trace_view.trace_list(found, kind, _int(query, "limit", 50, 1, 500)),
                "jaeger_ui": self.jaeger_ui,
            }
        if path.startswith("/api/traces/"):
            prefix = path.removeprefix("/api/traces/").lower()
            if not prefix or not all(c in "0123456789abcdef" for c in prefix):
                raise BadRequest("a trace id is hexadecimal")
            match = next(
                (m for d in self.traces_dirs if (m := trace_view.find(d, prefix)) is not None),
                None,
            )
            if match is None:
                raise LookupError(prefix)
            trace_id, spans = match
            return {
                "trace_id": trace_id,
                "rows": trace_view.waterfall_rows(spans),
                "jaeger": f"{self.jaeger_ui}/trace/{trace_id}" if self.jaeger_ui else None,
            }
        if path == "/api/reports":
            return {"reports": reports.list_reports(self.reports_dir)}
        if path.startswith("/api/reports/"):
            try:
                return reports.report_points(self.reports_dir, path.removeprefix("/api/reports/"))
            except ValueError as err:
                raise BadRequest(str(err)) from None
        raise LookupError(path)


def _str(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{key}: required")
    return value


def _int(query: dict[str, str], key: str, default: int, low: int, high: int) -> int:
    try:
        value = int(query.get(key, default))
    except ValueError:
        raise BadRequest(f"{key}: not a number") from None
    return max(low, min(high, value))


def _handler(
    console: Console, port: Callable[[], int], token: ConsoleToken
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "mesh-console"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug(format, *args)

        def _host_ok(self) -> bool:
            host = (self.headers.get("Host") or "").lower()
            return host in {f"127.0.0.1:{port()}", f"localhost:{port()}"}

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, payload: Any) -> None:
            self._send(status, json.dumps(payload).encode(), "application/json")

        def _answer(self, work: Callable[[], Any]) -> None:
            try:
                self._json(HTTPStatus.OK, work())
            except BadRequest as err:
                self._json(HTTPStatus.BAD_REQUEST, {"error": str(err)})
            except LookupError as err:
                self._json(HTTPStatus.NOT_FOUND, {"error": f"not found: {err}"})
            except Exception as err:  # a console error must never take mesh up down
                log.exception("console request failed")
                self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": type(err).__name__})

        def do_GET(self) -> None:
            if not self._host_ok():
                self._json(HTTPStatus.FORBIDDEN, {"error": "use 127.0.0.1 or localhost"})
                return
            url = urllib.parse.urlsplit(self.path)
            name = "index.html" if url.path == "/" else url.path.removeprefix("/static/")
            if name in STATIC:
                body = resources.files("chaos.console").joinpath("static", name).read_bytes()
                self._send(HTTPStatus.OK, body, CONTENT_TYPES[Path(name).suffix])
                return
            if (refused := token.refuse(self.headers.get("Authorization"))) is not None:
                self._json(HTTPStatus.UNAUTHORIZED, refused)
                return
            query = dict(urllib.parse.parse_qsl(url.query))
            self._answer(lambda: console.get(url.path, query))

        def do_POST(self) -> None:
            if not self._host_ok() or self.headers.get("X-Mesh-Console") != "1":
                self._json(HTTPStatus.FORBIDDEN, {"error": "changes need X-Mesh-Console: 1"})
                return
            if (refused := token.refuse(self.headers.get("Authorization"))) is not None:
                self._json(HTTPStatus.UNAUTHORIZED, refused)
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self._json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": "body too large"})
                return

            def work() -> Any:
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    raise BadRequest("the body is not JSON") from None
                if not isinstance(body, dict):
                    raise BadRequest("the body is a JSON object")
                return console.post(urllib.parse.urlsplit(self.path).path, body)

            self._answer(work)

    return Handler


class ConsoleServer:
    """The console on 127.0.0.1:`port` (0 picks one), served from a daemon thread, with a
    fresh token in the state dir (removed by close())."""

    def __init__(
        self,
        state: MeshState,
        port: int = 0,
        jaeger_ui: str | None = None,
        reports_dir: Path = Path("reports"),
    ) -> None:
        self.token = ConsoleToken.create(Path(state.state_dir))
        self.console = Console(state, jaeger_ui, reports_dir)
        try:
            self._httpd = ThreadingHTTPServer(
                ("127.0.0.1", port), _handler(self.console, lambda: self.port, self.token)
            )
        except BaseException:
            self.console.close()
            self.token.remove()
            raise
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="console", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The console's base URL (its API needs the token: `token_url` carries it)."""
        return f"http://127.0.0.1:{self.port}/"

    @property
    def token_url(self) -> str:
        """The URL to open in a browser: the page takes its token from it."""
        return self.token.url(self.url)

    def start(self) -> ConsoleServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self.console.close()
        self.token.remove()
