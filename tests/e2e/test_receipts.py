"""A checkout in `mesh up` produces a receipt: the job completes, `mesh jobs mailbox` shows it,
and `mesh traces` shows the worker's span in the checkout's trace."""

from __future__ import annotations

import json
import subprocess
import uuid
from typing import Any

import grpc
import pytest

from grpc_resilience_mesh.client import traces as tr
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc, payment_pb2
from tests.e2e.mesh_up_process import MESH, MeshUp
from tests.support.polling import wait_until

pytestmark = pytest.mark.e2e


def _mesh(*args: str) -> str:
    out = subprocess.run([*MESH, *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_checkout_receipt_reaches_the_mailbox(mesh_up: MeshUp) -> None:
    state_dir, state, md = mesh_up.state_dir, mesh_up.state, mesh_up.metadata()
    with grpc.insecure_channel(state["gateway"]) as ch:
        out = gateway_pb2_grpc.GatewayStub(ch).Checkout(
            gateway_pb2.CheckoutRequest(
                user_id="u-0004",
                amount_cents=990,
                currency="EUR",
                idempotency_key=f"e2e-receipt-{uuid.uuid4().hex}",
            ),
            timeout=10,
            metadata=md,
        )
    assert out.status == payment_pb2.CHARGE_STATUS_SUCCEEDED

    def receipts() -> list[dict[str, Any]]:
        mails = json.loads(_mesh("jobs", "mailbox", "--json", "--state-dir", str(state_dir)))
        return [m for m in mails if m["charge_id"] == out.charge_id]

    mine = wait_until(receipts, 20, f"a receipt for {out.charge_id}", interval_s=0.3)
    assert len(mine) == 1
    assert mine[0]["subject"] == "Your receipt for 9.90 EUR"
    shown = json.loads(
        _mesh("jobs", "show", f"receipt-{out.charge_id}", "--state-dir", str(state_dir))
    )
    assert shown["state"] == "completed"
    assert shown["attempts_made"] == 1
    assert shown["data"]["user_id"] == "u-0004"
    completed = json.loads(
        _mesh("jobs", "list", "--state", "completed", "--json", "--state-dir", str(state_dir))
    )
    assert f"receipt-{out.charge_id}" in [j["id"] for j in completed]
    output = mesh_up.stop()  # a graceful stop flushes every service's spans
    assert mesh_up.proc.returncode == 0, output

    spans = tr.load_spans(tr.trace_files(state_dir / "traces"))
    (worker_span,) = [s for s in spans if s["attributes"].get("mesh.charge_id") == out.charge_id]
    assert worker_span["service"] == "notification"
    assert worker_span["name"] == "process receipts"
    trace = tr.group_traces(spans)[worker_span["trace_id"]]
    parent = [s for s in trace if s["span_id"] == worker_span["parent_span_id"]]
    assert [s["service"] for s in parent] == ["payment"], "the worker continues the charge's trace"
    waterfall = _mesh("traces", worker_span["trace_id"], "--state-dir", str(state_dir))
    assert "process receipts" in waterfall
