"""Gateway.StreamRecommendations on the mesh as processes, through `mesh call stream`: the
whole stream, a stream cut after three items (partial, not retried), the front door."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import grpc
import pytest

from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.services.runtime.admin_auth import admin_metadata
from grpc_resilience_mesh.services.topology import replica_of
from grpc_resilience_mesh.services.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    gateway_pb2,
    gateway_pb2_grpc,
)
from tests.e2e.mesh_up_process import MESH

STREAM = "/mesh.v1.RecommendationService/StreamRecommend"
ROOMY = {
    # What these tests check must not depend on how loaded the machine is: budgets far above
    # a stream's few milliseconds, so only the injected fault can cut one.
    "MESH_POLICY__GATEWAY_TO_RECOMMENDATION__DEADLINE__TOTAL_S": "20",
    "MESH_POLICY__GATEWAY_TO_RECOMMENDATION__DEADLINE__ATTEMPT_S": "10",
    "MESH_POLICY__RECOMMENDATION_TO_PROFILE__DEADLINE__TOTAL_S": "10",
    "MESH_POLICY__RECOMMENDATION_TO_PROFILE__DEADLINE__ATTEMPT_S": "5",
}


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mesh]:
    m = Mesh(state_dir=tmp_path_factory.mktemp("streams"), ports=Ports.auto(), env=ROOMY)
    m.start()
    try:
        yield m
    finally:
        m.stop()


def call_stream(mesh: Mesh, *args: str, json_out: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MESH_STATE_DIR": str(mesh.state_dir)}
    env.pop("MESH_API_KEY", None)
    return subprocess.run(
        [*MESH, "call", "stream", "--timeout", "30", *args, *(("--json", "-") if json_out else ())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def cut_after_three(mesh: Mesh) -> Iterator[None]:
    """Recommendation's StreamRecommend fails with UNAVAILABLE after 3 items, every attempt,
    on every replica."""
    assert mesh.state is not None
    admins = [
        s["admin"]
        for name, s in mesh.state.services.items()
        if replica_of(name) == "recommendation"
    ]
    fault = admin_pb2.Fault(
        method=STREAM, error_rate=1.0, code="UNAVAILABLE", pushback_ms=-1, after_messages=3
    )
    md = admin_metadata(mesh.state.admin_token)
    channels = [grpc.insecure_channel(admin) for admin in admins]
    stubs = [admin_pb2_grpc.FaultAdminStub(channel) for channel in channels]
    try:
        for stub in stubs:
            stub.SetFault(admin_pb2.SetFaultRequest(fault=fault), timeout=30, metadata=md)
        yield
    finally:
        for stub in stubs:
            stub.ClearFaults(admin_pb2.ClearFaultsRequest(method=STREAM), timeout=30, metadata=md)
        for channel in channels:
            channel.close()


def test_mesh_call_stream_prints_every_ranked_item(mesh: Mesh) -> None:
    done = call_stream(mesh, "--user", "u-0001", "--limit", "7")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["code"] == "OK" and not doc["partial"]
    assert [i["rank"] for i in doc["items"]] == [1, 2, 3, 4, 5, 6, 7]
    assert len(doc["trace_id"]) == 32


def test_a_stream_cut_after_three_items_is_partial_and_not_retried(
    mesh: Mesh, cut_after_three: None
) -> None:
    done = call_stream(mesh, "--user", "u-0001", "--limit", "10")
    assert done.returncode == 1
    doc = json.loads(done.stdout)
    assert doc["code"] == "UNAVAILABLE"
    assert [i["rank"] for i in doc["items"]] == [1, 2, 3]
    assert doc["partial"] is True and doc["messages_before_error"] == 3
    human = call_stream(mesh, "--user", "u-0002", "--limit", "10", json_out=False)
    assert human.returncode == 1
    assert "partial: the stream failed after 3 items" in " ".join(human.stdout.split())


def test_the_stream_has_the_front_door_of_every_gateway_call(mesh: Mesh) -> None:
    assert mesh.state is not None
    with grpc.insecure_channel(mesh.state.gateway) as channel:
        stub = gateway_pb2_grpc.GatewayStub(channel)
        request = gateway_pb2.GetHomeRequest(user_id="u-0001", limit=3)
        with pytest.raises(grpc.RpcError) as no_key:
            list(stub.StreamRecommendations(request, timeout=30))
        assert no_key.value.code() is grpc.StatusCode.UNAUTHENTICATED
        md = (("authorization", f"Bearer {mesh.state.api_key}"),)
        bad = gateway_pb2.GetHomeRequest(user_id="u-0001", limit=500)
        with pytest.raises(grpc.RpcError) as bad_limit:
            list(stub.StreamRecommendations(bad, timeout=30, metadata=md))
        assert bad_limit.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        unknown = gateway_pb2.GetHomeRequest(user_id="u-0404", limit=3)
        with pytest.raises(grpc.RpcError) as no_user:
            list(stub.StreamRecommendations(unknown, timeout=30, metadata=md))
        assert no_user.value.code() is grpc.StatusCode.NOT_FOUND
        corrupt = channel.unary_stream("/mesh.v1.Gateway/StreamRecommendations")
        with pytest.raises(grpc.RpcError) as garbage:
            list(corrupt(b"\xff\xff\xff", timeout=30, metadata=md))
        assert garbage.value.code() is grpc.StatusCode.INVALID_ARGUMENT
