"""Each server is assembled in one place: the interceptor order is declared once, and each
outbound edge has exactly one pipeline, built one way, swapped in place on a policy change."""

from __future__ import annotations

import grpc.aio
import pytest
from prometheus_client import CollectorRegistry

from grpc_aio_resilience.admission_policy import ServerPolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.inbound import InboundInterceptor
from grpc_aio_resilience.shedding import SheddingInterceptor
from grpc_aio_resilience.stream_guard import StreamGuard
from grpc_resilience_mesh.services.faults.injection import FaultInterceptor, FaultTable
from grpc_resilience_mesh.services.policy.loading import load_policy
from grpc_resilience_mesh.services.runtime import server_chain
from grpc_resilience_mesh.services.runtime.config import ServiceConfig
from grpc_resilience_mesh.services.runtime.decoding import RequestDecodingInterceptor
from grpc_resilience_mesh.services.runtime.server import Runtime
from grpc_resilience_mesh.services.runtime.server_chain import (
    SERVER_ORDER,
    chain_in_order,
    server_layers,
)
from grpc_resilience_mesh.services.telemetry.fate_layer import FateLayer
from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics


class Marker(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Stands for a slot filled by a service or by tracing."""

    def __init__(self, slot: str) -> None:
        self.slot = slot

    async def intercept_service(self, continuation: object, details: object) -> object:
        raise AssertionError("never called: the test only reads the order")


def slot_of(interceptor: grpc.aio.ServerInterceptor) -> str:
    kinds: dict[type, str] = {
        RequestDecodingInterceptor: "decoding",
        InboundInterceptor: "inbound",
        SheddingInterceptor: "shedding",
        FaultInterceptor: "faults",
        StreamGuard: "streams",
        FateLayer: "fates",
    }
    return interceptor.slot if isinstance(interceptor, Marker) else kinds[type(interceptor)]


def test_declared_server_order() -> None:
    assert SERVER_ORDER == (
        "streams",
        "decoding",
        "tracing",
        "fates",
        "front",
        "inbound",
        "admission",
        "shedding",
        "faults",
    )


def test_every_slot_filled_keeps_the_declared_order() -> None:
    interceptors = server_layers(
        "gateway",
        ServerPolicy(),
        EventBus(),
        FaultTable(),
        tracing=[Marker("tracing")],
        front=[Marker("front")],
        admission=[Marker("admission")],
    )
    assert tuple(slot_of(i) for i in interceptors) == SERVER_ORDER


def test_a_service_without_its_own_interceptors_leaves_those_slots_out() -> None:
    interceptors = server_layers("profile", ServerPolicy(), EventBus(), FaultTable())
    assert [slot_of(i) for i in interceptors] == [
        s for s in SERVER_ORDER if s not in ("tracing", "front", "admission")
    ]


def test_the_chain_is_built_from_the_declared_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """SERVER_ORDER is the one place the order is written: change it and the chain follows."""
    reordered = tuple(reversed(SERVER_ORDER))
    monkeypatch.setattr(server_chain, "SERVER_ORDER", reordered)
    interceptors = server_layers(
        "gateway",
        ServerPolicy(),
        EventBus(),
        FaultTable(),
        tracing=[Marker("tracing")],
        front=[Marker("front")],
        admission=[Marker("admission")],
    )
    assert tuple(slot_of(i) for i in interceptors) == reordered


def test_a_slot_the_order_does_not_name_is_refused() -> None:
    with pytest.raises(ValueError, match="not in SERVER_ORDER"):
        chain_in_order({"auth": [Marker("front")]})


def gateway_runtime(policy: str) -> Runtime:
    env: dict[str, str] = {}
    return Runtime(
        ServiceConfig.from_env("gateway", env),
        load_policy(policy, env),
        EventBus(),
        FaultTable(),
        MeshMetrics(CollectorRegistry(), service="gateway"),
        environ=env,
    )


async def test_a_channel_has_the_one_interceptor_whose_pipeline_a_policy_swap_replaces() -> None:
    runtime = gateway_runtime("full")
    edge = runtime.edge("profile", lambda channel: channel)
    try:
        interceptor = edge.interceptor
        assert edge.channel.interceptor is interceptor  # its unary calls run its pipeline
        before = interceptor.pipeline
        assert before.names[0] == "bulkhead"
        runtime.apply_policy(load_policy("retry-only", {}))
        assert runtime.edges["profile"].interceptor is interceptor
        assert interceptor.pipeline is not before
        assert interceptor.pipeline.names == (
            "total_deadline",
            "retry",
            "attempt_timeout",
            "attempt_hook",
        )
    finally:
        await runtime.edges.close()
