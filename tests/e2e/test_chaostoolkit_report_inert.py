"""The real `chaos report --export-format=html` (Chaos Toolkit's reporting, pandoc) renders the
journal of an experiment whose title, hypothesis and file name are script, and the exported
experiment as Chaos Toolkit's own journal would carry it, as text: no element with an event
handler, no script, no javascript: link; the title still reads as written.

Needs no mesh; Chaos Toolkit's venv is tools/ctk_venv.py's (.peers/ctk), skipped with pip's
reason where it cannot be installed."""

from __future__ import annotations

import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.chaos.export.chaostoolkit import to_chaostoolkit
from grpc_resilience_mesh.chaos.export.journal import to_journal
from tests.unit.chaos.test_export_inert import HOSTILE_NAME, SCRIPT, hostile_result
from tools import ctk_venv

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def chaos_bin() -> Path:
    try:
        return ctk_venv.ensure()
    except RuntimeError as err:
        pytest.skip(f"Chaos Toolkit could not be installed: {err}")


class Active(HTMLParser):
    """What a browser would run: on* attributes, script elements, javascript: URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.found.append(tag)
        for key, value in attrs:
            url = (value or "").strip().lower()
            if key.startswith("on") or (key in ("href", "src") and url.startswith("javascript:")):
                self.found.append(f"<{tag} {key}={value}>")

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def reads(self) -> str:
        """The page's text, each run of whitespace one space (pandoc wraps long lines)."""
        return " ".join("".join(self.text).split())


def render(chaos_bin: Path, journal: dict[str, Any], where: Path) -> Active:
    (where / "journal.json").write_text(json.dumps(journal))
    done = subprocess.run(
        [str(chaos_bin), "report", "--export-format=html", "journal.json", "report.html"],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    parsed = Active()
    parsed.feed((where / "report.html").read_text())
    return parsed


def test_chaos_report_renders_a_hostile_journal_as_text(chaos_bin: Path, tmp_path: Path) -> None:
    rendered = render(chaos_bin, to_journal(hostile_result(), 1000.0, 1030.0), tmp_path)
    assert rendered.found == []
    assert f"{HOSTILE_NAME}: {SCRIPT}" in rendered.reads()


def test_chaos_report_renders_a_hostile_exported_experiment_as_text(
    chaos_bin: Path, tmp_path: Path
) -> None:
    result = hostile_result()
    journal = to_journal(result, 1000.0, 1030.0)
    variant = result.variants[0].variant
    journal["experiment"] = to_chaostoolkit(result.path, HOSTILE_NAME, result.experiment, variant)
    rendered = render(chaos_bin, journal, tmp_path)
    assert rendered.found == []
    assert f"{HOSTILE_NAME} (full): {SCRIPT}" in rendered.reads()
