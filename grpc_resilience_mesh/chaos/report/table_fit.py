"""Tables that fit a terminal's width without cutting a value.

Values (numbers, names, status codes, ids) are never shortened. To fit, a table first wraps
its headers (at spaces and underscores) and free-text cells (at spaces), then abbreviates
long headers and explains them in a legend, and only then leaves out its least important
columns, naming them beneath the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

GAP = 2
"""Spaces between two columns (SIMPLE_HEAD box, collapsed padding of 1)."""


@dataclass(frozen=True)
class Column:
    """A column: its header, how it aligns, and whether it may be left out."""

    header: str
    justify: Literal["left", "right"] = "right"
    keep: bool = False
    meaning: str = ""
    """What an abbreviated header stands for; shown in the legend when the column is."""
    wraps: bool = False
    """Free text (a reason, a subject): its cells may wrap at spaces in every row."""


@dataclass
class Row:
    """Cells in column order. `free` cells (a seed's note) may wrap at spaces; others never."""

    cells: list[str]
    style: str = ""
    free: bool = False


@dataclass
class FitTable:
    """Columns, rows and a priority order; `render(width)` makes the table that fits."""

    columns: list[Column]
    rows: list[Row] = field(default_factory=list)
    priority: list[int] | None = None
    """Column indexes, most important first; columns not named come last, in order."""
    title: str = ""
    caption: str = ""
    notes: list[str] = field(default_factory=list)
    explained: set[str] | None = None
    """Legend entries a run already printed (and this render adds to): shown once per run,
    not under every table; None: every table explains its own headers."""

    def add_row(self, *cells: str, style: str = "", free: bool = False) -> None:
        self.rows.append(Row([*cells, *[""] * (len(self.columns) - len(cells))], style, free))

    def render(self, width: int) -> RenderableType:
        shown, headers, widths = self._layout(width)
        table = Table(
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1),
            collapse_padding=True,
            title=Text(self.title) if self.title else None,
            title_justify="left",
            caption=Text(self.caption) if self.caption else None,
            caption_justify="left",
        )
        for i in shown:
            col = self.columns[i]
            table.add_column(
                Text(_wrap_header(headers[i], widths[i])),
                justify=col.justify,
                width=widths[i],
                overflow="fold",
            )
        for row in self.rows:
            table.add_row(*[Text(row.cells[i]) for i in shown], style=row.style or None)
        notes = [*self.notes]
        legend = [
            f"{headers[i]} = {self.columns[i].meaning or self.columns[i].header}"
            for i in shown
            if headers[i] != self.columns[i].header or self.columns[i].meaning
        ]
        if self.explained is not None:
            legend = [entry for entry in legend if entry not in self.explained]
            self.explained.update(legend)
        if legend:
            notes.append("legend: " + "; ".join(legend))
        left_out = [self.columns[i].header for i in range(len(self.columns)) if i not in shown]
        if left_out:
            notes.append(f"not shown at {width} columns: " + ", ".join(left_out))
        return Group(table, *[Text(n, style="dim") for n in notes])

    def _layout(self, width: int) -> tuple[list[int], dict[int, str], dict[int, int]]:
        n = len(self.columns)
        order = [*(self.priority or []), *(i for i in range(n) if i not in (self.priority or []))]
        optional = [i for i in order if not self.columns[i].keep]
        for dropped in range(len(optional) + 1):
            gone = set(optional[len(optional) - dropped :])
            shown = [i for i in range(n) if i not in gone]
            budget = width - GAP * (len(shown) - 1)
            full = {i: self.columns[i].header for i in shown}
            natural = {i: self._natural(i, full[i]) for i in shown}
            if sum(natural.values()) <= budget:
                return shown, full, natural
            least = {i: self._least(i, full[i]) for i in shown}
            headers = dict(full)
            for i, short in self._abbreviations(shown):
                if sum(least.values()) <= budget:
                    break
                headers[i], least[i] = short, self._least(i, short)
                natural[i] = self._natural(i, short)
            if sum(least.values()) <= budget:
                return shown, headers, self._grow(least, natural, budget, shown)
        shown = [i for i in range(n) if self.columns[i].keep]
        return (
            shown,
            {i: self.columns[i].header for i in shown},
            {i: self._natural(i, self.columns[i].header) for i in shown},
        )

    def _cells(self, i: int) -> list[tuple[str, bool]]:
        return [(r.cells[i], r.free or self.columns[i].wraps) for r in self.rows]

    def _natural(self, i: int, header: str) -> int:
        lines = [line for cell, _ in self._cells(i) for line in cell.split("\n")]
        return max(len(x) for x in [header, *lines])

    def _least(self, i: int, header: str) -> int:
        """The narrowest the column can be: its longest header piece, its longest value, and
        the longest word of its free-text cells."""
        widths = [max(len(t.rstrip()) for t in _header_tokens(header))]
        for cell, free in self._cells(i):
            for line in cell.split("\n"):
                widths.append(max((len(w) for w in line.split()), default=0) if free else len(line))
        return max(widths)

    def _abbreviations(self, shown: list[int]) -> list[tuple[int, str]]:
        """Shorter headers (initials, or a long word's first four letters), unique, for the
        columns whose header is wider than their values; the biggest saving first."""
        taken = {c.header for c in self.columns}
        found: list[tuple[int, int, str]] = []
        for i in shown:
            header = self.columns[i].header
            words = [w for w in re.split(r"[_\s]+", header) if w]
            short = "".join(w[0] for w in words) if len(words) > 1 else header[:4]
            base, k = short, 2
            while short in taken:
                short, k = f"{base}{k}", k + 1
            saving = self._least(i, header) - self._least(i, short)
            if saving > 0:
                taken.add(short)
                found.append((saving, i, short))
        found.sort(key=lambda f: -f[0])
        return [(i, short) for _, i, short in found]

    def _grow(
        self, least: dict[int, int], natural: dict[int, int], budget: int, shown: list[int]
    ) -> dict[int, int]:
        """Start every column at its least width, then hand out the spare room: first to
        columns of free text (fewer wrapped lines), then left to right."""
        widths = dict(least)
        spare = budget - sum(widths.values())
        free = [i for i in shown if any(free and cell for cell, free in self._cells(i))]
        for i in [*free, *(i for i in shown if i not in free)]:
            more = min(spare, natural[i] - widths[i])
            if more > 0:
                widths[i] += more
                spare -= more
        return widths


def _header_tokens(header: str) -> list[str]:
    """'giveup_computed_last_s' -> ['giveup_', 'computed_', 'last_', 's']; 'p99 ms' ->
    ['p99 ', 'ms']: the places a header may break."""
    return re.findall(r"[^_\s]+[_\s]?|[_\s]", header) or [""]


def _wrap_header(header: str, width: int) -> str:
    lines: list[str] = []
    line = ""
    for token in _header_tokens(header):
        if line and len((line + token).rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += token
    lines.append(line.rstrip())
    return "\n".join(lines)
