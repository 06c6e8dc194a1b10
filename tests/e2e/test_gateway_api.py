"""The public API over a real mesh: bad input gets the right status, checkout is idempotent."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.services.topology import INSTANCES
from grpc_resilience_mesh.services.v1 import (
    gateway_pb2,
    gateway_pb2_grpc,
    payment_pb2,
    payment_pb2_grpc,
)

SC = grpc.StatusCode


@pytest.fixture(scope="module")
def gateway(mesh: Mesh) -> Iterator[gateway_pb2_grpc.GatewayStub]:
    assert mesh.state is not None
    with grpc.insecure_channel(mesh.state.gateway) as channel:
        yield gateway_pb2_grpc.GatewayStub(channel)


@pytest.fixture(scope="module")
def md(mesh: Mesh) -> tuple[tuple[str, str], ...]:
    assert mesh.state is not None
    key = mesh.state.api_key
    return (("authorization", f"Bearer {key}"),) if key else ()


def _key() -> str:
    return f"test-{uuid.uuid4().hex}"


def _checkout(stub: Any, md: Any, **fields: Any) -> Any:
    req: dict[str, Any] = {
        "user_id": "u-0001",
        "amount_cents": 1250,
        "currency": "USD",
        "idempotency_key": _key(),
    }
    req.update(fields)
    return stub.Checkout(gateway_pb2.CheckoutRequest(**req), timeout=5, metadata=md)


@pytest.mark.parametrize(
    ("fields", "code", "words"),
    [
        ({"user_id": ""}, SC.INVALID_ARGUMENT, "user_id: required"),
        ({"user_id": "robert'); DROP TABLE"}, SC.INVALID_ARGUMENT, "user_id"),
        ({"user_id": "u-9999"}, SC.NOT_FOUND, "user_id: no user"),
        ({"amount_cents": -100}, SC.INVALID_ARGUMENT, "amount_cents"),
        ({"amount_cents": 0}, SC.INVALID_ARGUMENT, "amount_cents"),
        ({"amount_cents": 2**62}, SC.INVALID_ARGUMENT, "exceeds"),
        ({"currency": "DOGE"}, SC.INVALID_ARGUMENT, "currency"),
        ({"currency": ""}, SC.INVALID_ARGUMENT, "currency"),
        ({"idempotency_key": ""}, SC.INVALID_ARGUMENT, "idempotency_key: required"),
    ],
)
def test_bad_checkout_gets_the_right_status(gateway, md, fields, code, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as info:
        _checkout(gateway, md, **fields)
    assert info.value.code() == code
    assert words in info.value.details()


@pytest.mark.parametrize(
    ("req", "code", "words"),
    [
        ({"user_id": ""}, SC.INVALID_ARGUMENT, "user_id: required"),
        ({"user_id": "u-0404"}, SC.NOT_FOUND, "no user"),
        ({"user_id": "u-0001", "limit": 500}, SC.INVALID_ARGUMENT, "limit"),
    ],
)
def test_bad_home_gets_the_right_status(gateway, md, req, code, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as info:
        gateway.GetHome(gateway_pb2.GetHomeRequest(**req), timeout=5, metadata=md)
    assert info.value.code() == code
    assert words in info.value.details()


def test_services_stay_healthy_after_bad_input(mesh: Mesh, gateway, md) -> None:  # type: ignore[no-untyped-def]
    for _ in range(20):
        with pytest.raises(grpc.RpcError):
            _checkout(gateway, md, currency="???")
    assert mesh.state is not None
    for name, addrs in mesh.state.services.items():
        with grpc.insecure_channel(addrs["listen"]) as ch:
            reply = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=2)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING, name
    # every process, every replica included, still up in start-up order
    assert mesh.alive() == ["redis", "smtp", "toxiproxy", *(s.name for s in INSTANCES)]
    assert {"profile-2", "recommendation-2"} <= set(mesh.alive())


def test_same_key_twice_gives_the_same_charge(gateway, md) -> None:  # type: ignore[no-untyped-def]
    key = _key()
    first = _checkout(gateway, md, idempotency_key=key)
    second = _checkout(gateway, md, idempotency_key=key)
    assert first.status == payment_pb2.CHARGE_STATUS_SUCCEEDED
    assert second.charge_id == first.charge_id
    assert (first.replayed, second.replayed) == (False, True)


def test_same_key_different_payload_is_refused(gateway, md) -> None:  # type: ignore[no-untyped-def]
    key = _key()
    _checkout(gateway, md, idempotency_key=key, amount_cents=1000)
    with pytest.raises(grpc.RpcError) as info:
        _checkout(gateway, md, idempotency_key=key, amount_cents=2000)
    assert info.value.code() == SC.ALREADY_EXISTS
    assert "idempotency_key" in info.value.details()


def test_over_limit_charge_is_declined_not_failed(gateway, md) -> None:  # type: ignore[no-untyped-def]
    reply = _checkout(gateway, md, user_id="u-0050", amount_cents=100)  # u-0050 is blocked
    assert reply.status == payment_pb2.CHARGE_STATUS_DECLINED
    assert reply.decline_reason == "card_blocked"


def test_ledger_survives_a_restart_of_payment(mesh: Mesh, gateway, md) -> None:  # type: ignore[no-untyped-def]
    key = _key()
    before = _checkout(gateway, md, idempotency_key=key)
    mesh.restart_service("payment")
    # the gateway's channel may still hold the reset connection of the killed payment for a
    # moment (UNAVAILABLE, as a client retrying would see): ask again until it answers, 15 s
    give_up = time.monotonic() + 15
    while True:
        try:
            after = gateway.GetCharge(
                payment_pb2.GetChargeRequest(idempotency_key=key), timeout=5, metadata=md
            )
            break
        except grpc.RpcError as err:
            if err.code() != SC.UNAVAILABLE or time.monotonic() > give_up:
                raise
            time.sleep(0.2)
    assert after.charge_id == before.charge_id
    assert after.status == payment_pb2.CHARGE_STATUS_SUCCEEDED
    again = _checkout(gateway, md, idempotency_key=key)
    assert again.replayed and again.charge_id == before.charge_id
    assert mesh.state is not None
    with grpc.insecure_channel(mesh.state.services["payment"]["listen"]) as ch:
        direct = payment_pb2_grpc.PaymentServiceStub(ch).GetCharge(
            payment_pb2.GetChargeRequest(charge_id=before.charge_id),
            timeout=2,
            metadata=(("authorization", f"Bearer {mesh.state.internal_token}"),),
        )
    assert direct.charge.idempotency_key == key


def test_unknown_charge_is_not_found(gateway, md) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as info:
        gateway.GetCharge(
            payment_pb2.GetChargeRequest(charge_id="ch_" + "0" * 24), timeout=5, metadata=md
        )
    assert info.value.code() == SC.NOT_FOUND
