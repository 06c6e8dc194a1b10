"""PolicyAdmin swaps a running service's policy in place: new limits and fresh breakers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest
import yaml

from chaos.experiment import load_experiment
from chaos.launcher import Mesh, MeshState
from chaos.runner import Runner, Target, policy_text
from mesh.v1 import admin_pb2, admin_pb2_grpc, gateway_pb2, gateway_pb2_grpc


def admin(mesh: Mesh, service: str) -> admin_pb2_grpc.PolicyAdminStub:
    assert mesh.state is not None
    return admin_pb2_grpc.PolicyAdminStub(
        grpc.insecure_channel(mesh.state.services[service]["admin"])
    )


def test_set_policy_changes_the_gateway_limits_in_place(mesh: Mesh) -> None:
    assert mesh.state is not None
    pid_before = mesh.state.pids["gateway"]
    doc = yaml.safe_load(policy_text("full"))
    doc["name"] = "tiny-shed"
    doc["servers"] = {"gateway": {"max_in_flight": 1, "shed_pushback_ms": 321}}
    info = admin(mesh, "gateway").SetPolicy(
        admin_pb2.SetPolicyRequest(yaml=yaml.safe_dump(doc)), timeout=5
    )
    assert info.name == "tiny-shed"
    assert admin(mesh, "gateway").GetPolicy(admin_pb2.GetPolicyRequest()).name == "tiny-shed"
    md = (("authorization", f"Bearer {mesh.state.api_key}"),)

    async def burst() -> list[grpc.StatusCode]:
        async with grpc.aio.insecure_channel(mesh.state.gateway) as channel:  # type: ignore[union-attr]
            stub = gateway_pb2_grpc.GatewayStub(channel)

            async def one() -> grpc.StatusCode:
                try:
                    await stub.GetHome(
                        gateway_pb2.GetHomeRequest(user_id="u-0001"), timeout=5, metadata=md
                    )
                    return grpc.StatusCode.OK
                except grpc.aio.AioRpcError as err:
                    return err.code()

            return await asyncio.gather(*(one() for _ in range(20)))

    codes = asyncio.run(burst())
    assert grpc.StatusCode.RESOURCE_EXHAUSTED in codes, "max_in_flight 1 sheds a burst"
    admin(mesh, "gateway").SetPolicy(admin_pb2.SetPolicyRequest(yaml=policy_text("full")))
    assert set(asyncio.run(burst())) == {grpc.StatusCode.OK}
    assert mesh.state.pids["gateway"] == pid_before, "no restart"


@pytest.mark.parametrize(
    ("text", "code", "words"),
    [
        ("", grpc.StatusCode.INVALID_ARGUMENT, "yaml: required"),
        (
            "name: x\nedge_defaults: {retry: {max_attempts: 99}}",
            grpc.StatusCode.INVALID_ARGUMENT,
            "max_attempts",
        ),
        (
            "name: x\nedges: {gateway_to_recommendation: {retry: {max_attempts: 1}, "
            "native_retry: {enabled: true}}}",
            grpc.StatusCode.FAILED_PRECONDITION,
            "restart",
        ),
    ],
)
def test_bad_policies_are_refused_and_change_nothing(
    mesh: Mesh, text: str, code: grpc.StatusCode, words: str
) -> None:
    before = admin(mesh, "gateway").GetPolicy(admin_pb2.GetPolicyRequest())
    with pytest.raises(grpc.RpcError) as info:
        admin(mesh, "gateway").SetPolicy(admin_pb2.SetPolicyRequest(yaml=text), timeout=5)
    assert info.value.code() == code
    assert words in info.value.details()
    assert admin(mesh, "gateway").GetPolicy(admin_pb2.GetPolicyRequest()) == before


SWAP = """
title: policy swap
hypothesis: the variant's policy outlives a restart of one service
steady_state:
  load: {rpc: [home], requests: 2, concurrency: 1}
faults: []
load: {rpc: [home], requests: 2, concurrency: 1}
variants:
  - name: small
    overrides:
      servers: {profile: {max_in_flight: 7}}
"""


def test_a_swapped_policy_survives_a_restart_of_one_service(mesh: Mesh, tmp_path: Path) -> None:
    assert mesh.state is not None
    path = tmp_path / "swap.yaml"
    path.write_text(SWAP)
    _, exp = load_experiment(str(path))
    pid_before = mesh.state.pids["profile"]
    try:
        result = asyncio.run(Runner(Target.from_mesh(mesh)).run("swap", path, exp))
        [variant] = result.variants
        assert mesh.state.pids["profile"] == pid_before, "swapped in place, not restarted"
        assert admin(mesh, "profile").GetPolicy(admin_pb2.GetPolicyRequest()).name == "full+small"
        assert mesh.policy == variant.policy
        saved = MeshState.load(mesh.state_dir)
        assert saved is not None and saved.policy == variant.policy
        mesh.restart_service("profile")
        assert mesh.state.pids["profile"] != pid_before
        restarted = admin(mesh, "profile").GetPolicy(admin_pb2.GetPolicyRequest(), timeout=5)
        assert restarted.name == "full+small"
    finally:
        for service in mesh.state.services:
            admin(mesh, service).SetPolicy(
                admin_pb2.SetPolicyRequest(yaml=policy_text("full")), timeout=5
            )
        mesh.record_policy("full")
