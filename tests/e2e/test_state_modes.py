"""Everything `mesh up` writes under its state dir is the owner's alone: files 0600, folders
0700 (the mailbox holds names, emails and amounts; logs and traces the same and the calls).
`mesh chaos run`'s state is checked in test_chaos_cli.py, on the run it makes anyway."""

from __future__ import annotations

import uuid

import grpc
import pytest

from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc, payment_pb2
from tests.e2e.mesh_up_process import MeshUp
from tests.support.polling import wait_until
from tests.support.state_modes import loose_modes

pytestmark = pytest.mark.e2e


def test_state_files_are_0600_and_folders_0700_after_a_checkout(mesh_up: MeshUp) -> None:
    with grpc.insecure_channel(mesh_up.state["gateway"]) as ch:
        out = gateway_pb2_grpc.GatewayStub(ch).Checkout(
            gateway_pb2.CheckoutRequest(
                user_id="u-0004",
                amount_cents=990,
                currency="EUR",
                idempotency_key=f"e2e-modes-{uuid.uuid4().hex}",
            ),
            timeout=10,
            metadata=mesh_up.metadata(),
        )
    assert out.status == payment_pb2.CHARGE_STATUS_SUCCEEDED
    state_dir = mesh_up.state_dir
    wait_until(lambda: list(state_dir.rglob("*.eml")), 20, "the receipt's .eml", 0.3)
    wait_until(lambda: list(state_dir.rglob("*.jsonl")), 20, "a trace file", 0.3)
    mesh_up.stop()  # what is left after a clean stop counts too
    assert list(state_dir.rglob("*.log")), "the logs are there"
    loose = loose_modes(state_dir)
    assert loose == [], "\n".join(loose)
