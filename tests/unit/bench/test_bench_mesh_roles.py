"""`mesh bench mesh` charges every replica of a service to that service's column, and a SIGTERM
stops what it started."""

from __future__ import annotations

import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from grpc_resilience_mesh.bench import mesh as bench


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


def test_the_floor_runs_the_same_replicas_as_the_mesh() -> None:
    # the floor had one process per service while the mesh ran two profile and two
    # recommendation replicas: the ratio charged the mesh for processes the floor never ran
    from grpc_resilience_mesh.bench.plain_mesh import PlainMesh, floor_instances
    from grpc_resilience_mesh.services.topology import replicas

    instances = floor_instances()
    for service in ("profile", "recommendation", "gateway"):
        assert {spec.name for spec in replicas(service)} <= set(instances)
    assert instances.index("gateway") == len(instances) - 1  # callees serve first
    plain = PlainMesh({name: 7000 + i for i, name in enumerate(instances)}, Path("/nonexistent"))
    both = plain._addresses("profile").split(",")
    assert len(both) == len(replicas("profile")) == 2
    plain.procs = {name: SimpleNamespace(pid=10 + i) for i, name in enumerate(instances)}  # type: ignore[misc]
    pids = plain.pids()
    assert len(pids["profile"]) == 2 and len(pids["recommendation"]) == 2
    assert len(pids["gateway"]) == 1
