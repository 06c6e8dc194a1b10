"""A service's edges are one object each: a policy swap that changes gRPC's own retries gives
the edge a new channel and a new stub (the old stub is left as it was, never re-pointed in
place), and the policy admin swaps through the function it was given."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from grpc_aio_resilience.attempt import send_on_wire, send_without_wait_header
from grpc_resilience_mesh.services.policy.loading import load_policy, load_policy_text
from grpc_resilience_mesh.services.policy.model import MeshPolicy
from grpc_resilience_mesh.services.runtime.policy_admin import PolicyAdminServicer
from grpc_resilience_mesh.services.runtime.server import Runtime
from grpc_resilience_mesh.services.v1 import admin_pb2, profile_pb2_grpc
from tests.support.runtimes import runtime_for

NATIVE = """
name: native
edge_defaults:
  retry: {max_attempts: 1}
  native_retry: {enabled: true}
"""


def recommendation_runtime() -> Runtime:
    return runtime_for("recommendation")


async def test_a_swap_of_grpc_retries_gives_the_edge_a_new_channel_and_stub() -> None:
    runtime = recommendation_runtime()
    edge = runtime.edge("profile", profile_pb2_grpc.ProfileServiceStub)
    first_channel, first_stub = edge.channel, edge.stub
    first_method = first_stub.GetProfile
    try:
        assert edge.retries  # full: our retry strategy
        runtime.apply_policy(load_policy_text(NATIVE, environ={}))
        assert edge.channel is not first_channel
        assert edge.stub is not first_stub
        assert first_stub.GetProfile is first_method  # the old stub was not re-pointed
        assert edge.retries  # gRPC's own retries now
        assert len(runtime.edges.retiring) == 1  # the old channel drains
        interceptor = edge.interceptor
        runtime.apply_policy(load_policy("unprotected", {}))  # native off again: new channel
        assert edge.interceptor is interceptor  # one interceptor for the edge's whole life
        assert not edge.retries
        assert runtime.edges.pipelines()["profile"] is edge.pipeline
    finally:
        await runtime.edges.close()


async def test_a_swap_that_keeps_grpc_retries_keeps_the_channel() -> None:
    runtime = recommendation_runtime()
    edge = runtime.edge("profile", profile_pb2_grpc.ProfileServiceStub)
    channel, stub, pipeline = edge.channel, edge.stub, edge.pipeline
    try:
        runtime.apply_policy(load_policy("retry-only", {}))
        assert (edge.channel, edge.stub) == (channel, stub)
        assert edge.pipeline is not pipeline
        assert len(runtime.edges.retiring) == 0
    finally:
        await runtime.edges.close()


GATED = """
name: gated
servers:
  profile: {intake: {discipline: codel, codel_target_s: 0.005, codel_interval_s: 0.03}}
"""


async def test_an_edge_sends_the_deadline_header_only_to_a_server_that_reads_it() -> None:
    runtime = recommendation_runtime()
    edge = runtime.edge("profile", profile_pb2_grpc.ProfileServiceStub)
    try:
        assert edge.pipeline.wire is send_without_wait_header  # full: profile has no gate
        runtime.apply_policy(load_policy_text(GATED, environ={}))
        assert edge.pipeline.wire is send_on_wire  # the gate reads resilience-timeout-ms
        runtime.apply_policy(load_policy("full", {}))
        assert edge.pipeline.wire is send_without_wait_header
    finally:
        await runtime.edges.close()


async def test_an_edge_is_opened_once_per_dependency() -> None:
    runtime = recommendation_runtime()
    runtime.edge("profile", profile_pb2_grpc.ProfileServiceStub)
    try:
        with pytest.raises(ValueError, match="already open"):
            runtime.edge("profile", profile_pb2_grpc.ProfileServiceStub)
    finally:
        await runtime.edges.close()


class Aborted(Exception):
    pass


class Context:
    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise Aborted(code, details)


async def test_the_policy_admin_swaps_through_the_function_it_is_given() -> None:
    current = load_policy("full", {})
    swapped: list[MeshPolicy] = []

    def swap(policy: MeshPolicy) -> None:
        nonlocal current
        swapped.append(policy)
        current = policy

    admin = PolicyAdminServicer(lambda: current, swap)
    ctx: Any = Context()
    got = await admin.GetPolicy(admin_pb2.GetPolicyRequest(), ctx)
    assert got.name == "full"
    info = await admin.SetPolicy(admin_pb2.SetPolicyRequest(yaml=NATIVE), ctx)
    assert [p.name for p in swapped] == ["native"] == [info.name]
    assert (await admin.GetPolicy(admin_pb2.GetPolicyRequest(), ctx)).name == "native"
    with pytest.raises(Aborted) as refused:
        await admin.SetPolicy(admin_pb2.SetPolicyRequest(yaml="name: x\nedges: {nope: {}}"), ctx)
    assert refused.value.args[0] == grpc.StatusCode.INVALID_ARGUMENT
    assert len(swapped) == 1  # a refused document swaps nothing
