"""`mesh bench mesh` charges every replica of a service to that service's column, and a SIGTERM
stops what it started."""

from __future__ import annotations

import signal
from types import SimpleNamespace
from typing import Any

import pytest

from chaos.bench import mesh as bench


def _mesh(names: list[str], direct: bool) -> Any:
    procs = [
        SimpleNamespace(name=n, popen=SimpleNamespace(pid=100 + i)) for i, n in enumerate(names)
    ]
    return SimpleNamespace(procs=procs, direct=direct)


def test_replicas_are_counted_with_their_service() -> None:
    names = ["toxiproxy", "profile", "profile-2", "recommendation", "recommendation-2", "gateway"]
    assert bench._mesh_pids(_mesh(names, direct=False)) == {
        "gateway": (105,),
        "recommendation": (103, 104),
        "profile": (101, 102),
        "proxy": (100,),
    }


def test_direct_has_no_proxy_column() -> None:
    assert "proxy" not in bench._mesh_pids(_mesh(["profile", "recommendation", "gateway"], True))


def test_sigterm_unwinds_the_bench_so_its_processes_are_stopped() -> None:
    # `timeout` and cancelled jobs send SIGTERM: without this the bench died on the spot and
    # left its floor, mesh and sink processes running.
    before = signal.getsignal(signal.SIGTERM)
    stopped = []
    with pytest.raises(bench.Terminated), bench._terminate_unwinds():
        try:
            signal.raise_signal(signal.SIGTERM)
        finally:
            stopped.append(True)  # where the bench's `with` blocks stop what they started
    assert stopped == [True]
    assert signal.getsignal(signal.SIGTERM) == before
