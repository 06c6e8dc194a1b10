"""`mesh call` without a mesh: bad amounts end in one line and exit 2; a refused call names
its trace and where the CLI looked for the mesh and the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.cli.call import parse_amount


@pytest.mark.parametrize(
    ("amount", "reason"),
    [
        ("inf", "not a finite number"),
        ("-Infinity", "not a finite number"),
        ("sNaN", "not a finite number"),
        ("nan", "not a finite number"),
        ("1e400", "too large"),
        ("12.505", "more than two decimals"),
        ("twelve", "not a number"),
    ],
)
def test_a_bad_amount_is_one_line_and_exit_2(amount: str, reason: str) -> None:
    result = CliRunner().invoke(
        app, ["call", "checkout", "--user", "u-0001", "--amount", amount, "--addr", "127.0.0.1:1"]
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --amount:") and reason in lines[0]
    assert "Traceback" not in result.output


def test_good_amounts_become_cents() -> None:
    assert [parse_amount(a) for a in ("12.50", "0.01", " 3 ", "1e2")] == [1250, 1, 300, 10000]


def test_a_refused_call_names_its_trace_and_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # another folder: no var/mesh.json here
    monkeypatch.delenv("MESH_API_KEY", raising=False)
    monkeypatch.delenv("MESH_STATE_DIR", raising=False)
    result = CliRunner().invoke(
        app,
        ["call", "home", "--user", "u-0001", "--addr", "127.0.0.1:1", "--timeout", "0.5"],
        env={"COLUMNS": "80"},
    )
    assert result.exit_code == 1
    assert re.search(r"trace: [0-9a-f]{32}\b", result.output)
    where = " ".join(result.output.split())
    assert f"mesh state: {tmp_path.resolve() / 'var' / 'mesh.json'} (not found" in where
    assert "MESH_STATE_DIR" in where and "API key: none (MESH_API_KEY is unset" in where
