"""The routes docs/architecture.md's "Follow a call" claims: each `###` route's measured totals
(the bold figures before its list) and its files, as numbered groups of one folder each:

    1. `folder/` (N): `a.py` does this, `sub/b.py` that
    2. `folder/` (N, trace files on): ... (crossed only with trace files on)

A group's files are the backquoted `.py` names in its text (up to the next item or blank line),
under its folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
TRACE_FILES_ONLY = ", trace files on"
_GROUP = re.compile(
    r"^\d+\. `([^`]+/)` \((\d+)((?:, [a-z ]+)?)\):(.*?)(?=\n\d+\. |\n\s*\n|\Z)", re.M | re.S
)
_FILE = re.compile(r"`([\w/]+\.py)`")
_TOTAL = re.compile(r"\*\*(\d+)\*\*")


@dataclass(frozen=True)
class Group:
    """One numbered item: a folder, the count the page gives, the files it names."""

    folder: str
    count: int
    files: tuple[str, ...]
    trace_files_only: bool


@dataclass(frozen=True)
class Route:
    """One `###` route: its title, the totals its text states, its groups in order."""

    title: str
    totals: tuple[int, ...]
    groups: tuple[Group, ...]

    @property
    def files(self) -> list[str]:
        return [f for g in self.groups for f in g.files]

    @property
    def tracing_off(self) -> list[str]:
        return [f for g in self.groups if not g.trace_files_only for f in g.files]

    @property
    def with_trace_files(self) -> list[str]:
        return self.files


def _route(title: str, body: str) -> Route:
    first = _GROUP.search(body)
    intro = body if first is None else body[: first.start()]
    groups = tuple(
        Group(
            folder=folder,
            count=int(count),
            files=tuple(folder + name for name in _FILE.findall(text)),
            trace_files_only=qualifier == TRACE_FILES_ONLY,
        )
        for folder, count, qualifier, text in _GROUP.findall(body)
    )
    return Route(title, tuple(int(n) for n in _TOTAL.findall(intro)), groups)


def routes() -> dict[str, Route]:
    """Each `###` route of the section, by its title."""
    section = PAGE.read_text().split("\n## Follow a call\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, Route] = {}
    for block in section.split("\n### ")[1:]:
        title, body = block.split("\n", 1)
        found[title.strip()] = _route(title.strip(), body)
    return found


def _route_titled(start: str) -> Route:
    found = [r for title, r in routes().items() if title.startswith(start)]
    assert len(found) == 1, f"{PAGE.name}: {len(found)} routes titled {start}..."
    return found[0]


def get_home_route() -> Route:
    return _route_titled("GetHome")


def chaos_run_route() -> Route:
    return _route_titled("`mesh chaos run FILE`")


def differences(route: str, claimed: list[str], measured: list[str]) -> str:
    """What the page says of `route` and the measurement disagree on, one file a line ("" when
    they agree): the message a route test fails with."""
    listed, crossed = set(claimed), set(measured)
    lines = [f"  listed, not crossed: {f}" for f in sorted(listed - crossed)]
    lines += [f"  crossed, not listed: {f}" for f in measured if f not in listed]
    if not lines:
        return ""
    return f"docs/architecture.md's {route} ({len(measured)} files crossed):\n" + "\n".join(lines)
