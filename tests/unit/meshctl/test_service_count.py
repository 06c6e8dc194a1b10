"""The README, the docs site's index and `mesh demo`'s banner give the number of services the
topology has (issue 46: the README said five, the banner and the index four)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.cli import chaos_run
from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.services.topology import INSTANCES, SERVICES

ROOT = Path(__file__).resolve().parents[3]
WORDS = {4: "four", 5: "five", 6: "six", 7: "seven"}


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_front_pages_count_the_topologys_services(page: str) -> None:
    text = (ROOT / page).read_text()
    said = {w.lower() for w in re.findall(r"\b(\w+) services\b", text)} & set(WORDS.values())
    assert said == {WORDS[len(SERVICES)]}, f"{page} says {said} services"


def test_the_demo_banner_counts_the_topologys_services(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_runs(*args: Any, **kwargs: Any) -> list[object]:
        return []

    monkeypatch.setattr(chaos_run, "execute", no_runs)
    result = CliRunner().invoke(app, ["demo"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    banner = " ".join(result.output.split())
    assert f"({len(SERVICES)} services in {len(INSTANCES)} processes" in banner, banner
