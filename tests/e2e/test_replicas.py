"""Two replicas of profile and recommendation on the mesh as processes: both serve, and a
kill -9 of one loses no request, whose replica is back in rotation once started again."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator

import grpc
import pytest

from grpc_resilience_mesh.client.counters import scrape
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.loadgen.in_process import metadata_for
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc
from tests.support.polling import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mesh]:
    # Ten processes start: room for a loaded machine (the default is 30 s).
    m = Mesh(state_dir=tmp_path_factory.mktemp("replicas"), ports=Ports.auto(), start_timeout_s=60)
    m.start()
    try:
        yield m
    finally:
        m.stop()


def served_by(mesh: Mesh, process: str) -> float:
    """GetProfile calls one process of profile has answered, from its own /metrics."""
    assert mesh.state is not None
    url = {process: mesh.state.services[process]["metrics"]}
    snap = asyncio.run(scrape(url))
    method = "/mesh.v1.ProfileService/GetProfile"
    return snap.total("mesh_server_calls_total", "profile", method=method)


def home(mesh: Mesh, calls: int) -> list[str]:
    """`calls` home requests, 4 at a time; the status code of each."""

    async def run() -> list[str]:
        async with grpc.aio.insecure_channel(mesh.gateway) as channel:
            stub = gateway_pb2_grpc.GatewayStub(channel)
            md = metadata_for(mesh.api_key)
            sem = asyncio.Semaphore(4)

            async def one(i: int) -> str:
                async with sem:
                    request = gateway_pb2.GetHomeRequest(user_id=f"u-{i % 200 + 1:04d}")
                    try:
                        await stub.GetHome(request, timeout=5, metadata=md)
                    except grpc.aio.AioRpcError as err:
                        return str(err.code().name)
                    return "OK"

            return list(await asyncio.gather(*(one(i) for i in range(calls))))

    return asyncio.run(run())


def test_both_replicas_of_profile_serve(mesh: Mesh) -> None:
    assert mesh.state is not None
    assert {"profile", "profile-2", "recommendation", "recommendation-2"} <= set(mesh.state.pids)
    assert home(mesh, 40) == ["OK"] * 40
    assert served_by(mesh, "profile") > 0 and served_by(mesh, "profile-2") > 0


def test_a_killed_replica_loses_no_request_and_comes_back(mesh: Mesh) -> None:
    mesh.kill("profile-2", signal.SIGKILL)
    assert home(mesh, 60) == ["OK"] * 60  # every call went to (or was retried on) profile
    mesh.restart_service("profile-2")
    # Counted from 0 by the new process; the callers reconnect within their backoff.
    wait_until(
        lambda: home(mesh, 8) and served_by(mesh, "profile-2") > 0,
        timeout_s=20,
        what="the restarted profile-2 serving again",
    )
