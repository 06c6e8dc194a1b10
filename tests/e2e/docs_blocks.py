"""The shell blocks of README.md and docs/quickstart.md, each with the mark that says how the docs
test runs it: an HTML comment on the line before the block, `<!-- run: MODE[; OPTION]... -->`.

Modes:
- `mesh`: each `$ ` line in order, in one folder laid out as a clone (`.venv/bin/mesh`, `var/`),
  each must exit 0; the doc's `mesh up` line starts the mesh in the background (with
  `--auto-ports` added, so parallel tests never share a port), the test waits for its
  var/mesh.json and stops it at the doc's end with SIGINT (Ctrl-C), by PID.
- `rehearsal`: every line only in the rehearsal (slow: `make demo`, `make test`).
- `toxiproxy-client`: run by tests/e2e/test_quickstart_toxiproxy.py, with the Python block.

Options, each naming a line by a piece of its text:
- `until "TEXT": CMD`: the line runs in a terminal (a pty: rich draws a live view only on one)
  until its output shows TEXT, then gets SIGINT (a command that runs until Ctrl-C, such as
  `mesh watch`).
- `rehearsal: CMD`: the line runs only in the rehearsal (minutes: a whole chaos run).
- `from /REGEX/: <PLACEHOLDER>`: the placeholder is replaced by the regex's first group, found
  in the output of the lines before (an idempotency key a checkout printed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "README.md", ROOT / "docs" / "quickstart.md")
SHELL = {"console", "shell", "bash", "sh"}
MODES = {"mesh", "rehearsal", "toxiproxy-client"}
MARK = re.compile(r"<!-- run: (.*) -->")
UNTIL = re.compile(r'until "([^"]+)": (.+)')
FROM = re.compile(r"from /(.+)/: (<[^>]+>)")


@dataclass
class Line:
    """One `$ ` command and how it runs."""

    command: str
    until: str | None = None
    rehearsal: bool = False
    fills: dict[str, str] = field(default_factory=dict)
    """Placeholder -> regex whose first group replaces it."""


@dataclass
class Block:
    doc: Path
    line: int
    lang: str
    mode: str | None
    lines: list[Line]

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def fenced(doc: Path) -> list[tuple[int, str, str, str | None]]:
    """(line number, language, text, mark) of each fenced block, in order."""
    out = []
    lines = doc.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang, start = lines[i][3:].strip(), i
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            found = MARK.fullmatch(before.strip())
            text = "\n".join(lines[start + 1 : end])
            out.append((start + 1, lang, text, found.group(1) if found else None))
            i = end
        i += 1
    return out


def parse(doc: Path, number: int, lang: str, text: str, mark: str | None) -> Block:
    """A shell block with its mark read; ValueError for an option that names no line."""
    clauses = [c.strip() for c in (mark or "").split(";")]
    lines = [Line(raw[2:]) for raw in text.splitlines() if raw.startswith("$ ")]
    for clause in clauses[1:]:
        if until := UNTIL.fullmatch(clause):
            _named(lines, until.group(2), clause).until = until.group(1)
        elif clause.startswith("rehearsal: "):
            _named(lines, clause.removeprefix("rehearsal: "), clause).rehearsal = True
        elif fill := FROM.fullmatch(clause):
            _named(lines, fill.group(2), clause).fills[fill.group(2)] = fill.group(1)
        else:
            raise ValueError(f"{doc.name}:{number}: unknown option {clause!r}")
    return Block(doc, number, lang, clauses[0] if mark else None, lines)


def _named(lines: list[Line], piece: str, clause: str) -> Line:
    named = [line for line in lines if piece in line.command]
    if len(named) != 1:
        raise ValueError(f"{clause!r} names {len(named)} lines, not one")
    return named[0]


def shell_blocks(doc: Path) -> list[Block]:
    return [parse(doc, *found) for found in fenced(doc) if found[1] in SHELL]
