"""`make docs`'s build: mkdocs --strict, so a broken link between pages fails the suite."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _build(config: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_site_builds_strict(tmp_path: Path) -> None:
    built = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "patterns" / "circuit-breaker" / "index.html").exists()
    assert (tmp_path / "site" / "reference" / "metrics" / "index.html").exists()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "quickstart.md"
    page.write_text(page.read_text() + "\n[gone](patterns/no-such-page.md)\n", encoding="utf-8")
    built = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert "no-such-page.md" in built.stderr
