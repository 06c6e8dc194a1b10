"""The README is the front door: short, the two commands, a first fault early, live links."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_is_at_most_200_lines_and_names_the_two_commands() -> None:
    assert len(README.splitlines()) <= 200
    assert "make demo" in README and "make test" in README


def test_the_first_fault_comes_within_80_lines() -> None:
    first = next(i for i, line in enumerate(README.splitlines(), 1) if "mesh fault add" in line)
    assert first <= 80


def test_every_relative_link_of_the_readme_exists() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    assert links
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert missing == []


def test_nothing_points_at_benchmarks_md() -> None:
    assert not (ROOT / "BENCHMARKS.md").exists()
    assert "BENCHMARKS" not in README
