"""`mesh soak --results PATH` rewrites the soak's results page in place: the charges lost, each
process's growth against the target, the machine and the command; the page's prose kept, and
a miss written like a pass (no mesh here: a recorded result)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.bench.results import BEGIN, END
from grpc_resilience_mesh.chaos.soak import Growth, SoakConfig, SoakResult
from grpc_resilience_mesh.cli.app import app

PAGE = f"# Soak\n\nwhat it measures\n\n{BEGIN}\nold figures\n{END}\n\nwhat it means\n"


class FakeMesh:
    """A mesh that starts and stops nothing."""

    def __init__(self, **kwargs: Any) -> None:
        self.state = None

    def start(self) -> None:
        """Nothing to start."""

    def stop(self) -> dict[str, int]:
        return {}


def _recorded(lost: list[str]) -> SoakResult:
    result = SoakResult(SoakConfig(duration_s=600, rate_per_s=40, seed=42))
    result.elapsed_s = 600.4
    result.acknowledged = 11075
    result.lost = lost
    result.codes = Counter({"checkout OK": 11075})
    result.faults = [(10.0, "latency on gateway->profile", True), (20.0, "latency", False)]
    result.growth = [
        Growth("gateway", "rss_kb", 60_000, 60_780, 0.10),
        Growth("gateway", "fds", 20, 20, 0.10, slack=4),
        Growth("redis", "rss_kb", 8_000, 25_440, 0.10, judged=False),
        Growth("redis", "fds", 12, 12, 0.10, judged=False, slack=4),
    ]
    return result


def _soak(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lost: list[str]) -> tuple[int, str]:
    async def recorded(*args: Any) -> SoakResult:
        return _recorded(lost)

    monkeypatch.setattr("grpc_resilience_mesh.chaos.session.mesh_scope.Mesh", FakeMesh)
    monkeypatch.setattr("grpc_resilience_mesh.chaos.session.soak.run_soak", recorded)
    page = tmp_path / "soak.md"
    page.write_text(PAGE)
    args = ["soak", "--duration", "600", "--seed", "42", "--state-dir", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--results", str(page)], env={"COLUMNS": "200"})
    return result.exit_code, page.read_text()


def test_the_soak_rewrites_its_block_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, text = _soak(tmp_path, monkeypatch, lost=[])
    assert code == 0
    assert text.startswith(f"# Soak\n\nwhat it measures\n\n{BEGIN}\nMeasured 20")
    assert text.endswith(f"{END}\n\nwhat it means\n") and "old figures" not in text
    assert (
        "600 s at 40 requests/s, faults toggled: 1. **11,075 acknowledged charges, 0 lost.**"
        in text
    )
    assert "| gateway | 58.6 MiB -> 59.4 MiB (+1.3%) | 20.0 -> 20.0 (+0.0%) | judged |" in text
    redis = "| redis | 7.8 MiB -> 24.8 MiB (+218.0%) | 12.0 -> 12.0 (+0.0%) | reported only |"
    assert redis in text
    assert "Targets met." in text
    assert "Reproduce: `mesh soak --duration 600 --rate 40 --seed 42`" in text


def test_a_missed_soak_is_written_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, text = _soak(tmp_path, monkeypatch, lost=["key-1"])
    assert code == 1
    assert "11,075 acknowledged charges, 1 lost." in text and "Targets **missed**." in text
