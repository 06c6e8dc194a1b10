"""kill -9 of a runner mid-fault: its toxics are gone within 5 s, measured from the kill; so are
those of a runner frozen (SIGSTOP: alive, but its heartbeat stops).

The runner is a child process holding a FaultLease with the default ttl while its toxics are on.
The Toxiproxy is the embedded server as a process of its own, through its leases and used as if
it were real Toxiproxy (no leases: the watchdog process does the rollback), and real Toxiproxy
2.12 with the watchdog."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from grpc_resilience_mesh.chaos.topology.lease import FaultLease, LeaseError
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError
from grpc_resilience_mesh.launch.ports import free_port
from grpc_resilience_mesh.launch.real_toxiproxy import RealToxiproxy
from tests.support.peers import peer_binary

RUNNER = """
import sys, time
from grpc_resilience_mesh.chaos.topology.lease import FaultLease, LeaseError
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient

url, mode = sys.argv[1], sys.argv[2]
client = ToxiproxyClient(url)
with FaultLease(url, ["db", "cache"], embedded=mode == "embedded") as lease:
    client.add_toxic("db", "latency", attributes={"latency": 800}, name="slow")
    client.add_toxic("cache", "timeout", attributes={"timeout": 0}, name="hang")
    client.disable("cache")
    print("faulted", flush=True)
    time.sleep(60)  # killed or stopped long before
"""


def _embedded_process() -> Iterator[str]:
    """The embedded Toxiproxy as a process, as `mesh up` runs it; stopped by its PID."""
    port = free_port()
    argv = [sys.executable, "-m", "grpc_resilience_mesh.embedded_toxiproxy", "--port", str(port)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = ToxiproxyClient(f"http://127.0.0.1:{port}", timeout_s=2.0)
    try:
        for _ in range(500):
            try:
                client.version()
                break
            except ToxiproxyError:
                assert proc.poll() is None, "the embedded Toxiproxy exited"
                time.sleep(0.02)
        yield client.base_url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(params=["embedded", "real"])
def toxiproxy_process(request: pytest.FixtureRequest) -> Iterator[ToxiproxyClient]:
    """A Toxiproxy process with proxies db, cache and a bystander's (one toxic of its own):
    the embedded server, or real Toxiproxy 2.12 (`make peers`; skipped without it)."""
    if request.param == "real":
        with RealToxiproxy(binary=peer_binary("toxiproxy-server")) as real:
            yield _with_proxies(ToxiproxyClient(real.base_url, timeout_s=2.0))
        return
    for url in _embedded_process():
        yield _with_proxies(ToxiproxyClient(url, timeout_s=2.0))


def _with_proxies(client: ToxiproxyClient) -> ToxiproxyClient:
    for name in ("db", "cache", "bystander"):
        client.create_proxy(name, "127.0.0.1:0", "127.0.0.1:1")
    client.add_toxic("bystander", "latency", attributes={"latency": 1}, name="theirs")
    return client


def _faulted(client: ToxiproxyClient) -> bool:
    return (
        bool(client.toxics("db") or client.toxics("cache"))
        or not client.get_proxy("cache")["enabled"]
    )


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGSTOP], ids=["kill-9", "frozen"])
@pytest.mark.parametrize("mode", ["embedded", "real"])
def test_a_dead_or_frozen_runner_mid_fault_is_rolled_back_within_5_s(
    toxiproxy_process: ToxiproxyClient,
    mode: str,
    signum: signal.Signals,
    request: pytest.FixtureRequest,
) -> None:
    """`mode` is the runner's: "embedded" leases, "real" a watchdog (used against either)."""
    client = toxiproxy_process
    server = request.node.callspec.params["toxiproxy_process"]
    if server == "real" and mode == "embedded":
        pytest.skip("real Toxiproxy has no leases: a run against it uses the watchdog")
    runner = subprocess.Popen(
        [sys.executable, "-c", RUNNER, client.base_url, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert runner.stdout is not None
        line = runner.stdout.readline()
        assert line.strip() == "faulted", runner.stderr.read() if runner.stderr else line
        assert _faulted(client)
        killed = time.monotonic()
        os.kill(runner.pid, signum)
        while _faulted(client):
            assert time.monotonic() - killed < 10.0, "the faults outlived the runner"
            time.sleep(0.02)
        took_s = time.monotonic() - killed
    finally:
        if runner.poll() is None:
            runner.kill()
        runner.wait(10)
    shown = f"{server} Toxiproxy, {'lease' if mode == 'embedded' else 'watchdog'}"
    print(f"\n{shown}: toxics gone {took_s:.2f} s after {signum.name} of the runner")
    assert took_s <= 5.0
    assert [t["name"] for t in client.toxics("bystander")] == ["theirs"]
    if mode == "embedded":
        assert client.leases() == {}


def test_a_clean_release_ends_the_watchdog_and_leaves_the_proxies(
    toxiproxy_process: ToxiproxyClient,
) -> None:
    client = toxiproxy_process
    # A ttl of 0.6 s (a heartbeat every 0.2 s) once saw its faults rolled back under a loaded CI
    # runner: the test's own process missed its heartbeats for 0.6 s. 1.5 s leaves room for such
    # a stall while 4 heartbeats (2 s) still run past the ttl.
    lease = FaultLease(client.base_url, ["db"], ttl_s=1.5, embedded=False)
    with lease:
        client.add_toxic("db", "latency", attributes={"latency": 100}, name="slow")
        watchdog = lease._watchdog
        assert watchdog is not None and watchdog.poll() is None
        since = time.monotonic()
        while lease.renewals < 4:  # 4 heartbeats of ttl/3: past the ttl, faults still on
            assert time.monotonic() - since < 10.0
            assert [t["name"] for t in client.toxics("db")] == ["slow"]
            time.sleep(0.05)
        assert [t["name"] for t in client.toxics("db")] == ["slow"]
        heartbeat_dir = lease.heartbeat.parent
    assert watchdog.poll() is not None, "the watchdog exited with the release"
    assert not heartbeat_dir.exists()
    assert lease.renew_errors == 0
    assert [t["name"] for t in client.toxics("db")] == ["slow"], "its owner removes its faults"


def test_a_lease_the_server_cannot_hold_is_refused_before_any_fault(
    toxiproxy_process: ToxiproxyClient, request: pytest.FixtureRequest
) -> None:
    if request.node.callspec.params["toxiproxy_process"] != "real":
        pytest.skip("the embedded server holds leases")
    with pytest.raises(LeaseError, match=r"could not take a lease .*404"):
        FaultLease(toxiproxy_process.base_url, ["db"]).__enter__()
