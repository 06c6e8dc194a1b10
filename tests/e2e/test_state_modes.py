"""Everything `mesh up` writes under its state dir is the owner's alone: files 0600, folders
0700 (the mailbox holds names, emails and amounts; logs and traces the same and the calls)."""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

import grpc
import pytest

from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc, payment_pb2
from tests.e2e.mesh_up_process import MeshUp
from tests.e2e.test_chaos_cli import run
from tests.support.polling import wait_until

pytestmark = pytest.mark.e2e


def loose_modes(root: Path) -> list[str]:
    """Every entry under `root` (and root) whose mode lets the group or others in."""
    found = []
    for path in [root, *sorted(root.rglob("*"))]:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        want = 0o700 if stat.S_ISDIR(mode) else 0o600
        if stat.S_IMODE(mode) & ~want:
            found.append(f"{oct(stat.S_IMODE(mode))} {path.relative_to(root.parent)}")
    return found


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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_chaos_run_keeps_its_state_private_and_its_reports_shareable(tmp_path: Path) -> None:
    proc, results = run(tmp_path, max_calls=12)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert results and results[0]["held"] is True
    state_dir = tmp_path / "state"
    assert list(state_dir.rglob("*.log")) and list(state_dir.rglob("*.jsonl"))
    loose = loose_modes(state_dir)
    assert loose == [], "\n".join(loose)
    # Reports are for sharing: they keep the umask the user ran the command with.
    report = tmp_path / "reports" / "short" / "report.md"
    assert stat.S_IMODE(report.stat().st_mode) == 0o666 & ~_umask()
    assert stat.S_IMODE((tmp_path / "reports" / "index.html").stat().st_mode) == 0o666 & ~_umask()
