"""Markdown for the generated pages: a header saying where a page comes from, and tables."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def header(title: str, source: str) -> str:
    return (
        f"# {title}\n\n"
        f"Generated from {source} by `python -m tools.docs_reference --write`; do not edit by "
        "hand: a test fails when this page differs from what the code says now.\n"
    )


def cell(text: object) -> str:
    """One table cell: on one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def table(heads: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def code(text: object) -> str:
    return f"`{text}`"
