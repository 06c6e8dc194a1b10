"""`mesh jobs list` and `mesh jobs mailbox` keep receipt ids whole at 80 and 120 columns."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.cli.jobs import jobs_table
from grpc_resilience_mesh.client.queue_admin import JobView

CHARGE = "ch_" + "7f3a9c21" * 4


def _views() -> list[JobView]:
    return [
        JobView(
            id=f"receipt-{CHARGE}{n}",
            state="failed" if n else "completed",
            attempts_made=5,
            attempts=5,
            failed_reason="SMTP 421 4.3.0 try again later (mailbox busy)" if n else "",
            processed_on=1_700_000_000_000,
            finished_on=1_700_000_002_500,
            data={},
        )
        for n in range(3)
    ]


@pytest.mark.parametrize("width", [80, 120])
def test_jobs_list_keeps_receipt_ids_whole(width: int) -> None:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(jobs_table(_views(), width))
    text = console.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= width
    for view in _views():
        assert view.id in text
    assert "try again later" in " ".join(text.split())


@pytest.mark.parametrize("width", [80, 120])
def test_mailbox_keeps_charge_ids_whole(tmp_path: Path, width: int) -> None:
    box = tmp_path / "mailbox"
    box.mkdir()
    (box / "0001.eml").write_text(
        "To: u-0001@example.test\nSubject: Your receipt for a charge of 12.50 USD\n"
        f"X-Mesh-Charge-Id: {CHARGE}\nX-Sink-Received-At: 1700000000.5\n"
        f"Message-ID: <receipt-{CHARGE}@mesh.local>\n\nthanks\n"
    )
    result = CliRunner().invoke(
        app, ["jobs", "mailbox", "--state-dir", str(tmp_path)], env={"COLUMNS": str(width)}
    )
    assert result.exit_code == 0, result.output
    assert CHARGE in result.output and "…" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= width
    as_json = CliRunner().invoke(
        app, ["jobs", "mailbox", "--state-dir", str(tmp_path), "--json", "-"]
    )
    assert json.loads(as_json.stdout)[0]["charge_id"] == CHARGE
