"""describe() of a built pipeline: its strategies outermost first, each with its options as
JSON data and what it does per method, and the traps of its build; pinned for every edge of
the mesh's own policies, so a change of order or of an option shows here."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from grpc_aio_resilience import PipelineDescriptor, describe, from_dict
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.pipeline import Pipeline, build_pipeline
from grpc_aio_resilience.traps import ResiliencePolicyWarning
from grpc_resilience_mesh.services.policy.loading import PRESETS, load_policy
from grpc_resilience_mesh.services.topology import EDGES, service
from grpc_resilience_mesh.services.v1 import payment_pb2, profile_pb2, recommendation_pb2
from tests.unit.resilience import trap_proto
from tests.unit.resilience.test_pipeline_order import EXPECTED
from tests.unit.resilience.unit_fakes import recording_bus

assert payment_pb2 and profile_pb2 and recommendation_pb2  # their services are in the pool
GRPC_EDGES = [e.name for e in EDGES if service(e.dependency).grpc_service]
PAYMENT, PROFILE, RECOMMENDATION = (
    "/mesh.v1.PaymentService/",
    "/mesh.v1.ProfileService/",
    "/mesh.v1.RecommendationService/",
)

# (preset, edge) -> bulkhead max_concurrent, total_s, retry max_attempts, attempt_s (None: off)
NUMBERS: dict[tuple[str, str], tuple[int | None, float, int | None, float]] = {
    ("full", "gateway_to_payment"): (16, 2.0, 2, 0.8),
    ("full", "gateway_to_profile"): (40, 1.0, 3, 0.3),
    ("full", "gateway_to_recommendation"): (20, 0.8, 3, 0.35),
    ("full", "recommendation_to_profile"): (32, 0.3, 3, 0.1),
    ("retry-only", "gateway_to_payment"): (None, 2.0, 3, 0.8),
    ("retry-only", "gateway_to_profile"): (None, 1.0, 3, 0.3),
    ("retry-only", "gateway_to_recommendation"): (None, 0.8, 3, 0.35),
    ("retry-only", "recommendation_to_profile"): (None, 0.3, 3, 0.1),
    ("unprotected", "gateway_to_payment"): (None, 2.0, None, 2.0),
    ("unprotected", "gateway_to_profile"): (None, 1.0, None, 1.0),
    ("unprotected", "gateway_to_recommendation"): (None, 0.8, None, 0.8),
    ("unprotected", "recommendation_to_profile"): (None, 0.3, None, 0.3),
}
TRAPPED = {
    ("full", "gateway_to_recommendation"): ["attempts_outlast_deadline"],
    ("retry-only", "gateway_to_payment"): ["attempts_outlast_deadline"],
    ("retry-only", "gateway_to_recommendation"): ["attempts_outlast_deadline"],
}
"""The traps the mesh's own policies build (0.35 s x 3 > 0.8 s; 0.8 s x 3 > 2 s)."""


def mesh_pipeline(preset: str, edge: str) -> Pipeline:
    dependency = edge.rpartition("_to_")[2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResiliencePolicyWarning)
        return build_pipeline(
            load_policy(preset, {}).edge(edge),
            dependency=dependency,
            bus=recording_bus()[0],
            services=(service(dependency).grpc_service,),
        )


def value(d: PipelineDescriptor, strategy: str, option: str) -> Any:
    return d.strategy(strategy).options[option] if strategy in d.names else None


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("edge", GRPC_EDGES)
def test_every_mesh_edge_is_described_in_order_with_its_numbers(preset: str, edge: str) -> None:
    pipeline = mesh_pipeline(preset, edge)
    d = describe(pipeline)
    assert d.names == pipeline.names == EXPECTED[preset]
    assert d.dependency == edge.rpartition("_to_")[2]
    numbers = (
        value(d, "bulkhead", "max_concurrent"),
        value(d, "total_deadline", "total_s"),
        value(d, "retry", "max_attempts"),
        value(d, "attempt_timeout", "attempt_s"),
    )
    assert numbers == NUMBERS[(preset, edge)]
    assert [t.kind for t in d.traps] == TRAPPED.get((preset, edge), [])
    assert json.loads(json.dumps(d.to_dict())) == d.to_dict()


def test_the_default_edge_of_full_as_data() -> None:
    d = describe(mesh_pipeline("full", "gateway_to_payment"))
    assert d.to_dict()["strategies"][2] == {
        "name": "retry",
        "options": {
            "max_attempts": 2,
            "base_backoff_s": 0.05,
            "max_backoff_s": 0.5,
            "budget": {"max_tokens": 10.0, "token_ratio": 0.1, "enabled": True},
        },
        "methods": {
            f"{PAYMENT}Charge": "only with idempotency_key set: up to 2 attempts",
            f"{PAYMENT}GetCharge": "up to 2 attempts",
        },
    }
    breaker = d.strategy("breaker")
    assert breaker.options == {
        "scope": "method",
        "consecutive_failures": 5,
        "failure_rate": 0.5,
        "window_size": 20,
        "min_calls": 10,
        "open_s": 2.0,
        "half_open_max_probes": 10,
        "half_open_successes": 3,
    }
    assert breaker.methods == dict.fromkeys(
        (f"{PAYMENT}Charge", f"{PAYMENT}GetCharge"), "its own breaker"
    )
    assert d.strategy("throttle").options == {"k": 2.0, "window_s": 10.0, "min_requests": 10}
    assert d.strategy("attempt_hook").options == {}


def test_an_off_retry_budget_shows_as_off_without_its_numbers() -> None:
    d = describe(mesh_pipeline("retry-only", "gateway_to_profile"))
    assert d.strategy("retry").options["budget"] == {"enabled": False}


def test_a_stream_is_retried_before_its_first_message_only() -> None:
    d = describe(mesh_pipeline("full", "gateway_to_recommendation"))
    assert d.strategy("retry").methods[f"{RECOMMENDATION}StreamRecommend"] == (
        "up to 3 attempts, before the first message only"
    )


def test_a_users_own_service_as_a_user_would_assert_it() -> None:
    edge = from_dict(EdgePolicy, {"breaker": {"scope": "dependency"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResiliencePolicyWarning)
        pipeline = build_pipeline(
            edge, dependency="ledger", bus=recording_bus()[0], services=(trap_proto.register(),)
        )
    d = describe(pipeline)
    assert d.strategies[2].name == "retry"
    assert d.strategy("retry").methods == {
        trap_proto.POST: "off: no idempotency declared",
        trap_proto.GET: "up to 3 attempts",
        trap_proto.PUT: "up to 3 attempts",
        trap_proto.TRANSFER: "only with idempotency_key set: up to 3 attempts",
        trap_proto.WATCH: "up to 3 attempts, before the first message only",
    }
    assert set(d.strategy("breaker").methods.values()) == {"the edge's one breaker"}
    assert [(t.kind, t.method) for t in d.traps] == [("never_retried", trap_proto.POST)]


def test_the_text_form_is_one_line_per_strategy_then_the_traps() -> None:
    pipeline = mesh_pipeline("full", "gateway_to_recommendation")
    lines = str(describe(pipeline)).splitlines()
    assert lines[0] == "recommendation (retry-outside-breaker), outermost first:"
    firsts = [line.split()[0] for line in lines[1:] if line.startswith("  ") and line[2] != " "]
    assert firsts == [*EXPECTED["full"], "!"]
    assert "  total_deadline  total_s=0.8" in lines
    assert "    every method (3): its own breaker" in lines
    assert lines[-1].startswith("  ! recommendation: deadline.attempt_s (0.35) x retry.max")


def test_methods_named_besides_the_services_are_described_too() -> None:
    pipeline = mesh_pipeline("full", "gateway_to_profile")
    d = describe(pipeline, methods=[trap_proto.POST])
    assert list(d.strategy("retry").methods) == [f"{PROFILE}GetProfile", trap_proto.POST]


def test_a_streams_pipeline_describes_as_its_edges_and_a_hand_made_one_by_names() -> None:
    pipeline = mesh_pipeline("full", "gateway_to_profile")
    assert describe(pipeline.with_wire(pipeline.wire)) == describe(pipeline)
    bare = Pipeline(list(pipeline.strategies[:2]), recording_bus()[0], pipeline._clock)
    assert describe(bare).names == ("bulkhead", "total_deadline")
    assert describe(bare).strategy("bulkhead").options == {}


def test_a_hedged_method_is_described_under_hedging_and_not_under_retry() -> None:
    hedged = [trap_proto.GET, trap_proto.POST, trap_proto.WATCH]
    edge = from_dict(EdgePolicy, {"hedging": {"enabled": True, "methods": hedged}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResiliencePolicyWarning)
        pipeline = build_pipeline(
            edge, dependency="ledger", bus=recording_bus()[0], services=(trap_proto.register(),)
        )
    d = describe(pipeline)
    assert d.strategy("hedging").options["hedging_delay_s"] == 0.05
    assert d.strategy("hedging").methods == {
        trap_proto.POST: "off: no idempotency declared",
        trap_proto.GET: "up to 2 attempts, 0.05 s apart",
        trap_proto.PUT: "off: not one of hedging.methods",
        trap_proto.TRANSFER: "off: not one of hedging.methods",
        trap_proto.WATCH: "off: a stream never hedges",
    }
    assert d.strategy("retry").methods[trap_proto.GET] == "off: hedged instead"
    assert d.strategy("retry").methods[trap_proto.PUT] == "up to 3 attempts"
