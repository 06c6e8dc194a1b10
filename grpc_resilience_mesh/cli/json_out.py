"""`--json PATH` means one thing in every command: write the result as JSON to PATH.

`--json -`, or a bare `--json`, writes it to stdout instead, and nothing else goes there
(tables and notes go to stderr), so the output pipes into `jq`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

STDOUT = Path("-")

JsonOpt = Annotated[
    Path | None,
    typer.Option(
        "--json",
        metavar="PATH",
        help="Write the result as JSON to PATH (`-` or a bare --json: stdout).",
    ),
]


def to_stdout(path: Path | None) -> bool:
    return path is not None and str(path) == "-"


def write_json(path: Path, doc: Any) -> None:
    """The document to PATH (its folder created), or to stdout for `-`."""
    text = json.dumps(doc, indent=2, default=str)
    if to_stdout(path):
        typer.echo(text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")


def bare_json_to_stdout(argv: Sequence[str]) -> list[str]:
    """`--json` with no PATH after it (last, or followed by another option) becomes
    `--json -`: click has no optional option values, and `mesh call ... --json` predates PATH."""
    out = list(argv)
    i = 0
    while i < len(out):
        if out[i] == "--json":
            following = out[i + 1] if i + 1 < len(out) else None
            if following is None or (following.startswith("-") and following != "-"):
                out.insert(i + 1, "-")
        i += 1
    return out


@contextmanager
def human_output_to_stderr(json_path: Path | None, *consoles: Console) -> Iterator[None]:
    """With `--json -`, the commands' tables and notes go to stderr while they run."""
    if not to_stdout(json_path):
        yield
        return
    # What each console was given, not what it resolved: a console made without a file
    # follows sys.stdout (which a test runner swaps), and must go on following it.
    saved = [c._file for c in consoles]
    for c in consoles:
        c.file = sys.stderr
    try:
        yield
    finally:
        for c, file in zip(consoles, saved, strict=True):
            c._file = file
