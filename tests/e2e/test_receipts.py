"""A checkout in `mesh up` produces a receipt: the job completes, `mesh jobs mailbox` shows it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import grpc
import pytest

from mesh.v1 import gateway_pb2, gateway_pb2_grpc, payment_pb2

pytestmark = pytest.mark.e2e

MESH = [sys.executable, "-m", "chaos.cli"]


def _state(state_dir: Path, proc: subprocess.Popen[bytes]) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + 90
    path = state_dir / "mesh.json"
    while not path.exists():
        assert proc.poll() is None, f"mesh up exited early: {proc.stdout.read().decode()}"  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "mesh up did not come up in 90 s"
        time.sleep(0.1)
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def _mesh(*args: str) -> str:
    out = subprocess.run([*MESH, *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_checkout_receipt_reaches_the_mailbox(tmp_path: Path) -> None:
    state_dir = tmp_path / "var"
    proc = subprocess.Popen(
        [*MESH, "up", "--auto-ports", "--state-dir", str(state_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        state = _state(state_dir, proc)
        md = (("authorization", f"Bearer {state['api_key']}"),) if state.get("api_key") else ()
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

        deadline = time.monotonic() + 20
        while True:
            mails = json.loads(_mesh("jobs", "mailbox", "--json", "--state-dir", str(state_dir)))
            mine = [m for m in mails if m["charge_id"] == out.charge_id]
            if mine:
                break
            assert time.monotonic() < deadline, f"no receipt for {out.charge_id}: {mails}"
            time.sleep(0.3)
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
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0
