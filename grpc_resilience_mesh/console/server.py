"""The console: what its JSON API does (`Console`), served on 127.0.0.1 (`ConsoleServer`).

The services' metrics are sampled once a second in the background (grpc_resilience_mesh.console.
metrics_view.MetricsSampler), so every rate is over the last 5 s from the first frame, however
long no page was open; the rest of `/api/state` (faults, progress) is read when a page asks,
at most once per `min_interval_s` however many pages poll it. How requests are checked and
answered (loopback Host, the per-run token of grpc_resilience_mesh.console.auth on every API call,
`X-Mesh-Console: 1` on every change, the body cap) is grpc_resilience_mesh.console.routes.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.client.trace_source import TraceSource
from grpc_resilience_mesh.console import address, reports, trace_view
from grpc_resilience_mesh.console.auth import ConsoleToken
from grpc_resilience_mesh.console.background_load import BackgroundLoad, LoadSettings
from grpc_resilience_mesh.console.bounded_http import BoundedHttpServer, HttpLimits
from grpc_resilience_mesh.console.faults import FaultError
from grpc_resilience_mesh.console.metrics_view import MetricsSampler
from grpc_resilience_mesh.console.routes import BadRequest, ConsoleRoutes
from grpc_resilience_mesh.console.view import CONSOLE_WINDOW_S, MeshView

log = logging.getLogger("grpc_resilience_mesh.console")


class Console:
    """What the API does, independent of HTTP (the handler only parses and answers)."""

    def __init__(
        self,
        state: MeshState,
        jaeger_ui: str | None = None,
        reports_dir: Path = Path("reports"),
        min_interval_s: float = 0.8,
    ) -> None:
        # Sampled every second whether a page is open or not (a handful of small scrapes), so
        # rates are over the last 5 s from the first frame; a poll scrapes only if that lags.
        self.view = MeshView(state, fresh_s=1.5)
        self.sampler = MetricsSampler(self.view.metrics).start()
        self.load = BackgroundLoad(state.gateway, state.api_key)
        self.jaeger_ui = jaeger_ui.rstrip("/") if jaeger_ui else None
        self.reports_dir = reports_dir
        # This mesh's traces, then those of experiments run on their own mesh (`mesh chaos
        # run` keeps its state in var/chaos by default, beside `mesh up`'s var).
        self.traces_dirs = (
            Path(state.state_dir) / "traces",
            Path(state.state_dir) / "chaos" / "traces",
        )
        self.trace_source = TraceSource.of(state)
        """Where this mesh's spans went: the traces tab lists that copy, this run's only."""
        if self.trace_source.kind == "jaeger" and self.jaeger_ui is None:
            self.jaeger_ui = self.trace_source.where
        self._min_interval_s = min_interval_s
        self._cached: dict[str, Any] | None = None
        self._cached_at = 0.0
        self._lock = threading.Lock()

    def close(self) -> None:
        self.sampler.stop()
        self.load.stop()
        self.view.close()

    def state(self) -> dict[str, Any]:
        with self._lock:
            if self._cached is None or time.monotonic() - self._cached_at >= self._min_interval_s:
                self._cached = self.view.snapshot()
                self._cached_at = time.monotonic()
            snap = dict(self._cached)
        snap["load"] = self.load.status()
        snap["rate_window_s"] = CONSOLE_WINDOW_S
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
                        None if body.get("for_s") is None else float(body["for_s"]),
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
            limit = _int(query, "limit", 50, 1, 500)
            return {
                **trace_view.listing(self.trace_source, kind, limit),
                "jaeger_ui": self.jaeger_ui,
            }
        if path.startswith("/api/traces/"):
            prefix = path.removeprefix("/api/traces/").lower()
            if not prefix or not all(c in "0123456789abcdef" for c in prefix):
                raise BadRequest("a trace id is hexadecimal")
            match = trace_view.lookup(self.trace_source, self.traces_dirs, prefix)
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


class ConsoleServer:
    """The console on 127.0.0.1:`port` (0 picks one), served from a daemon thread with its own event
    loop (grpc_resilience_mesh.console.bounded_http: capped connections, idle ones closed), with a
    fresh token in the state dir (removed by close())."""

    def __init__(
        self,
        state: MeshState,
        port: int = 0,
        jaeger_ui: str | None = None,
        reports_dir: Path = Path("reports"),
        limits: HttpLimits | None = None,
    ) -> None:
        limits = limits or HttpLimits()
        self.token = ConsoleToken.create(Path(state.state_dir))
        self.console = Console(state, jaeger_ui, reports_dir)
        try:
            self._sock = socket.create_server(("127.0.0.1", port))  # a busy port: OSError here
        except BaseException:
            self.console.close()
            self.token.remove()
            raise
        self._pool = ThreadPoolExecutor(limits.workers, thread_name_prefix="console-work")
        routes = ConsoleRoutes(self.console, lambda: self.port, self._pool, limits, self.token)
        self._http = BoundedHttpServer(routes.app(), self._sock, limits)

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    @property
    def url(self) -> str:
        """The console's base URL (its API needs the token: `token_url` carries it)."""
        return f"http://127.0.0.1:{self.port}/"

    @property
    def token_url(self) -> str:
        """The URL to open in a browser: the page takes its token from it."""
        return self.token.url(self.url)

    def start(self) -> ConsoleServer:
        self._http.start()
        address.publish(self.token.path.parent, self.url)
        return self

    def close(self) -> None:
        address.withdraw(self.token.path.parent, self.url)
        self._http.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.console.close()
        self.token.remove()
