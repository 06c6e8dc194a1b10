"""No page says a heading twice: not two headings of the same text, and not a heading whose
first paragraph opens by repeating it in bold (issue 46: the circuit-breaker page did)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PAGES = sorted((ROOT / "docs").rglob("*.md"))


def headings(text: str) -> list[tuple[str, str]]:
    """(heading, the first non-blank line after it), outside fenced code."""
    lines = text.splitlines()
    found: list[tuple[str, str]] = []
    fenced = False
    for i, line in enumerate(lines):
        fenced = fenced != line.startswith("```")
        match = None if fenced else re.match(r"#{1,6} (.+)", line)
        if match:
            after = next((s for s in lines[i + 1 :] if s.strip()), "")
            found.append((match.group(1).strip(), after))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_heading_is_said_twice(page: Path) -> None:
    found = headings(page.read_text(encoding="utf-8"))
    names = [h for h, _ in found]
    assert sorted({h for h in names if names.count(h) > 1}) == []
    for heading, after in found:
        bold = re.match(r"\*\*(.+?)\*\*", after)
        assert not (bold and bold.group(1).rstrip(".:") == heading.rstrip(".:")), heading


def test_a_bold_repeat_is_caught() -> None:
    (found,) = headings("## Why\n\n**Why.** Because.\n")
    assert found == ("Why", "**Why.** Because.")
