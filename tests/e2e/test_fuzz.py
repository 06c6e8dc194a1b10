"""Hostile bytes at every method of every service (through the gateway with its key, and
directly): every answer is a deliberate gRPC status, nothing hangs, health stays SERVING.

FUZZ_EXAMPLES sets the budget (default 200, a few seconds; `make fuzz` runs thousands).
Payloads: random bytes, mutations of valid serialized requests, and well-formed requests with
hostile field values.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.services.v1 import (
    gateway_pb2,
    payment_pb2,
    profile_pb2,
    recommendation_pb2,
)
from tests.e2e.hardening_helpers import assert_every_service_serving

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "200"))
CALL_DEADLINE_S = 5.0
NOT_DELIBERATE = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.DEADLINE_EXCEEDED}
"""UNKNOWN is an unhandled exception in a handler; DEADLINE_EXCEEDED, with no fault injected,
is a hang."""

HOME = gateway_pb2.GetHomeRequest(user_id="u-0001", limit=5)
CHECKOUT = gateway_pb2.CheckoutRequest(
    user_id="u-0002", amount_cents=1250, currency="USD", idempotency_key="fuzz-seed-00000001"
)
GET_CHARGE = payment_pb2.GetChargeRequest(idempotency_key="fuzz-seed-00000001")
CHARGE = payment_pb2.ChargeRequest(
    user_id="u-0003", amount_cents=99, currency="EUR", idempotency_key="fuzz-seed-00000002"
)


@dataclass(frozen=True)
class Target:
    """One method on one port: `service` names the port in mesh.json."""

    service: str
    method: str
    seed: Message
    with_key: bool = True

    def __str__(self) -> str:
        return f"{self.service}{'' if self.with_key else ' (no key)'} {self.method}"


TARGETS = (
    Target("gateway", "/mesh.v1.Gateway/GetHome", HOME),
    Target("gateway", "/mesh.v1.Gateway/Checkout", CHECKOUT),
    Target("gateway", "/mesh.v1.Gateway/GetCharge", GET_CHARGE),
    Target("gateway", "/mesh.v1.Gateway/Checkout", CHECKOUT, with_key=False),
    Target(
        "profile",
        "/mesh.v1.ProfileService/GetProfile",
        profile_pb2.GetProfileRequest(user_id="u-0004"),
    ),
    Target(
        "recommendation",
        "/mesh.v1.RecommendationService/Recommend",
        recommendation_pb2.RecommendRequest(user_id="u-0005", limit=3),
    ),
    Target(
        "recommendation",
        "/mesh.v1.RecommendationService/Popular",
        recommendation_pb2.PopularRequest(limit=3),
    ),
    Target("payment", "/mesh.v1.PaymentService/Charge", CHARGE),
    Target("payment", "/mesh.v1.PaymentService/GetCharge", GET_CHARGE),
)

SCALARS: dict[int, st.SearchStrategy[object]] = {
    FieldDescriptor.TYPE_STRING: st.one_of(
        st.text(max_size=200), st.sampled_from(["u-0001", "u-9999", "USD", "'; DROP", "\x00"])
    ),
    FieldDescriptor.TYPE_INT64: st.integers(-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_INT32: st.integers(-(2**31), 2**31 - 1),
}


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "repeat"]))
        if op == "flip" and pos < len(data):
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 4))]
        elif op == "truncate":
            del data[pos:]
        elif op == "repeat":
            data += data[pos:]
    return bytes(data)


@st.composite
def hostile_fields(draw: st.DrawFn, seed: Message) -> bytes:
    message = type(seed)()
    message.CopyFrom(seed)
    for field in seed.DESCRIPTOR.fields:
        if field.type in SCALARS and draw(st.booleans()):
            setattr(message, field.name, draw(SCALARS[field.type]))
    return bytes(message.SerializeToString())


def payloads(target: Target) -> st.SearchStrategy[bytes]:
    seed = target.seed.SerializeToString()
    return st.one_of(st.binary(max_size=300), mutated(seed), hostile_fields(target.seed))


@pytest.fixture(scope="module")
def channels(mesh: Mesh) -> Iterator[dict[str, grpc.Channel]]:
    assert mesh.state is not None
    opened = {
        name: grpc.insecure_channel(addrs["listen"]) for name, addrs in mesh.state.services.items()
    }
    yield opened
    for channel in opened.values():
        channel.close()


SEEN: Counter[str] = Counter()


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_fuzzed_requests_get_deliberate_statuses(
    mesh: Mesh, channels: dict[str, grpc.Channel], data: st.DataObject
) -> None:
    assert mesh.state is not None and mesh.state.api_key
    target = data.draw(st.sampled_from(TARGETS), label="target")
    payload = data.draw(payloads(target), label="payload")
    # The gateway wants an API key, the services behind it the mesh's internal token.
    key = mesh.state.api_key if target.service == "gateway" else mesh.state.internal_token
    md = (("authorization", f"Bearer {key}"),) if target.with_key else ()
    call = channels[target.service].unary_unary(
        target.method, request_serializer=None, response_deserializer=None
    )
    try:
        call(payload, timeout=CALL_DEADLINE_S, metadata=md)
        code = grpc.StatusCode.OK
    except grpc.RpcError as err:
        code = err.code()
        assert code not in NOT_DELIBERATE, f"{target}: {code.name} {err.details()}"
    if not target.with_key:
        assert code == grpc.StatusCode.UNAUTHENTICATED
    SEEN[f"{target} -> {code.name}"] += 1


def test_after_the_fuzz_every_service_is_serving_and_logged_no_traceback(mesh: Mesh) -> None:
    assert mesh.state is not None
    assert_every_service_serving(mesh)
    for log in sorted(Path(mesh.state.state_dir, "logs").glob("*.log")):
        assert "Traceback" not in log.read_text(errors="replace"), log.name
    print(f"\nfuzz: {sum(SEEN.values())} calls")
    for line, count in sorted(SEEN.items()):
        print(f"  {count:5d}  {line}")
