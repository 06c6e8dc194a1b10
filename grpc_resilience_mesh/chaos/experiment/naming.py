"""How an experiment's errors quote a value from the file and suggest a known name."""

from __future__ import annotations

import difflib


def shown(value: str, limit: int = 40) -> str:
    """A value from the file, quoted and cut short."""
    return repr(value if len(value) <= limit else value[:limit] + "...")


def did_you_mean(value: str, known: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(value, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""
