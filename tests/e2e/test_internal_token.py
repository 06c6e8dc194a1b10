"""`mesh up` on a shared host (review round 4, item 5): a local process without the run's
internal token cannot charge through payment's port or its Toxiproxy port, nor send
CRITICAL_PLUS straight to recommendation; the gateway's calls, which carry the token through
Toxiproxy, go on. The token lives in mesh.json (0600) and the children's environment, never in
their command lines or logs."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from grpc_aio_resilience.criticality import METADATA_KEY
from grpc_resilience_mesh.services.runtime.internal_auth import internal_metadata
from grpc_resilience_mesh.services.v1 import (
    gateway_pb2,
    gateway_pb2_grpc,
    payment_pb2,
    payment_pb2_grpc,
    recommendation_pb2,
    recommendation_pb2_grpc,
)
from tests.e2e.mesh_up_process import MeshUp, running_mesh_up

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MeshUp]:
    with running_mesh_up(tmp_path_factory.mktemp("internal") / "var") as running:
        yield running


def charges(state_dir: Path) -> int:
    db = sqlite3.connect(f"file:{state_dir / 'payment' / 'ledger.sqlite3'}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT COUNT(*) FROM charges").fetchone()[0])
    finally:
        db.close()


def charge(addr: str, metadata: tuple[tuple[str, str], ...]) -> grpc.StatusCode:
    request = payment_pb2.ChargeRequest(
        user_id="u-0003", amount_cents=100, currency="USD", idempotency_key=uuid.uuid4().hex
    )
    with grpc.insecure_channel(addr) as channel:
        try:
            payment_pb2_grpc.PaymentServiceStub(channel).Charge(
                request, timeout=10, metadata=metadata
            )
        except grpc.RpcError as err:
            return err.code()
    return grpc.StatusCode.OK


def test_without_the_token_payment_charges_nothing_by_either_port(up: MeshUp) -> None:
    token = up.state["internal_token"]
    ports = {
        "payment": up.state["services"]["payment"]["listen"],
        "its proxy": up.state["proxies"]["gateway_to_payment"]["listen"],
    }
    before = charges(up.state_dir)
    wrong = internal_metadata(up.state["admin_token"])  # a secret, but not this one
    refused = {name: (charge(a, ()), charge(a, wrong)) for name, a in ports.items()}
    assert refused == {name: (grpc.StatusCode.UNAUTHENTICATED,) * 2 for name in ports}, (
        "a caller without the internal token reached payment"
    )
    assert charges(up.state_dir) == before
    assert charge(ports["its proxy"], internal_metadata(token)) == grpc.StatusCode.OK
    assert charges(up.state_dir) == before + 1


def test_criticality_from_outside_is_refused_and_the_gateway_still_serves(up: MeshUp) -> None:
    addr = up.state["services"]["recommendation"]["listen"]
    with grpc.insecure_channel(addr) as channel:
        stub = recommendation_pb2_grpc.RecommendationServiceStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Recommend(
                recommendation_pb2.RecommendRequest(user_id="u-0001", limit=3),
                timeout=10,
                metadata=((METADATA_KEY, "CRITICAL_PLUS"),),
            )
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with grpc.insecure_channel(up.state["gateway"]) as channel:
        gateway = gateway_pb2_grpc.GatewayStub(channel)
        md = up.metadata()
        home = gateway.GetHome(
            gateway_pb2.GetHomeRequest(user_id="u-0001", limit=3), timeout=10, metadata=md
        )
        paid = gateway.Checkout(
            gateway_pb2.CheckoutRequest(
                user_id="u-0001", amount_cents=100, currency="USD", idempotency_key=uuid.uuid4().hex
            ),
            timeout=10,
            metadata=md,
        )
    assert list(home.degraded) == [] and len(home.recommendations) == 3
    assert paid.status == payment_pb2.CHARGE_STATUS_SUCCEEDED


def test_the_token_is_in_the_owner_only_state_and_nowhere_else_to_read(up: MeshUp) -> None:
    token = up.state["internal_token"]
    assert token and token not in (up.state["admin_token"], up.state["api_key"])
    assert (up.state_dir / "mesh.json").stat().st_mode & 0o777 == 0o600
    for name, pid in up.state["pids"].items():
        argv = Path(f"/proc/{pid}/cmdline").read_bytes()
        assert token.encode() not in argv, name
    written = [*(up.state_dir / "logs").glob("*.log*"), *(up.state_dir / "traces").rglob("*")]
    for path in (p for p in written if p.is_file()):
        assert token not in path.read_text(errors="replace"), path.name
