"""The routes docs/architecture.md's "Follow a call" lists: each route's files, in order."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
MAX_FILES = 12


def routes() -> dict[str, list[str]]:
    """Each `###` route of the section: the files of its numbered list, in order."""
    section = PAGE.read_text().split("\n## Follow a call\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, list[str]] = {}
    for block in section.split("\n### ")[1:]:
        title, body = block.split("\n", 1)
        found[title.strip()] = re.findall(r"^\d+\. `([^`]+)`", body, re.M)
    return found


def get_home_route() -> list[str]:
    (files,) = [f for title, f in routes().items() if title.startswith("GetHome")]
    return files
