"""The console's rates are over the last 5 s from the first frame, however long no page was
open: a service that was quiet, then failed every call, reads 100% errors at once (issue 28:
a console that scraped only when asked averaged over the whole quiet spell)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.console.server import Console

M = "/mesh.v1.ProfileService/GetProfile"


class FakeGateway:
    """A gateway's /metrics: calls to profile counted by outcome, moved by the test."""

    def __init__(self) -> None:
        self.ok = 100.0
        self.failed = 0.0
        self.failing = False
        self.lock = threading.Lock()

    def text(self) -> str:
        with self.lock:
            ok, failed = self.ok, self.failed
        head = 'mesh_client_calls_total{dependency="profile",method="%s",outcome="%s"} %s\n'
        return (
            "# TYPE mesh_client_calls_total counter\n"
            + head % (M, "OK", ok)
            + head % (M, "UNAVAILABLE", failed)
        )

    def traffic(self, stop: threading.Event) -> None:
        """20 calls/s while not quiet: all failing while `failing`, else all OK."""
        while not stop.wait(0.05):
            with self.lock:
                if self.failing:
                    self.failed += 1
                elif self.failed:
                    self.ok += 1


@pytest.fixture
def gateway() -> Iterator[tuple[FakeGateway, str]]:
    fake = FakeGateway()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = fake.text().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stop = threading.Event()
    threads = [
        threading.Thread(target=server.serve_forever, daemon=True),
        threading.Thread(target=fake.traffic, args=(stop,), daemon=True),
    ]
    for t in threads:
        t.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        for t in threads:
            t.join(timeout=5)


def _profile_edge(console: Console) -> dict[str, float]:
    console.changed()  # no cached frame: what a page opened now would get
    edge = next(e for e in console.state()["edges"] if e["name"] == "gateway_to_profile")
    return dict(edge["stats"])


def test_the_first_frame_after_a_quiet_spell_is_a_last_5_s_figure(
    tmp_path: Path, gateway: tuple[FakeGateway, str]
) -> None:
    fake, url = gateway
    state = MeshState(
        gateway="127.0.0.1:1",
        toxiproxy=None,
        services={"gateway": {"metrics": url, "admin": "127.0.0.1:1"}},
        proxies={},
        pids={},
        policy="full",
        state_dir=str(tmp_path),
    )
    console = Console(state, reports_dir=tmp_path / "reports")
    try:
        time.sleep(3.0)  # quiet: no calls, and no page open
        fake.failing = True
        time.sleep(6.5)  # every call fails; still no page open
        first = _profile_edge(console)
        assert first["error_rate"] == 1.0, first
        assert 10.0 <= first["calls_per_s"] <= 25.0, first  # 20/s, not diluted by the quiet
        fake.failing = False
        time.sleep(6.5)  # the fault is gone; every call succeeds
        after = _profile_edge(console)
        assert after["error_rate"] == 0.0, after
    finally:
        console.close()
