"""The vulnerability-region map: load x trigger length, each cell recovered within
RECOVERED_WITHIN_S or not, per policy, from the model (several seeds a cell).

The trigger's factor is held at the tipping panel's (x2); its length and the load vary, as in
Huang et al.'s Figure 7 (load against trigger size). A cure shows as the tipped region
shrinking."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from grpc_resilience_mesh.chaos.metastable.cures import ALL_CURES, RETRY_ONLY, Cures
from grpc_resilience_mesh.chaos.metastable.model import simulate
from grpc_resilience_mesh.chaos.metastable.outcome import model_metrics, recovered
from grpc_resilience_mesh.chaos.metastable.system import System

FULL_LOADS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
FULL_LENGTHS_S = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
QUICK_LOADS = (0.4, 0.7, 0.9)
QUICK_LENGTHS_S = (1.0, 3.0, 6.0)


@dataclass(frozen=True)
class Cell:
    """One (load, trigger length) point of one policy, over `seeds` runs."""

    load: float
    length_s: float
    recovered_runs: int
    seeds: int
    back_after_s: float
    """Median seconds from the trigger's end to goodput back (the load's end if never)."""

    @property
    def mark(self) -> str:
        """'.' recovered in every run, '#' in none, '~' in some."""
        if self.recovered_runs == self.seeds:
            return "."
        return "#" if self.recovered_runs == 0 else "~"


def cell(base: System, cures: Cures, load: float, length_s: float, seeds: int) -> Cell:
    system = base.with_cures(cures).at_load(load).with_trigger(base.trigger.factor, length_s)
    runs = [model_metrics(system, simulate(system, seed)) for seed in range(seeds)]
    return Cell(
        load,
        length_s,
        sum(recovered(m) for m in runs),
        seeds,
        statistics.median(m["back_after_trigger_s"] for m in runs),
    )


def region(
    base: System,
    cures: Cures,
    loads: Sequence[float],
    lengths_s: Sequence[float],
    seeds: int,
) -> list[list[Cell]]:
    """Rows by load (highest first, as a plot's y axis), columns by trigger length."""
    return [[cell(base, cures, ld, ln, seeds) for ln in lengths_s] for ld in sorted(loads)[::-1]]


def tipped_cells(rows: list[list[Cell]]) -> int:
    """Cells that did not recover in every run: the vulnerable region's size."""
    return sum(c.mark != "." for row in rows for c in row)


def maps(
    base: System, loads: Sequence[float], lengths_s: Sequence[float], seeds: int
) -> dict[str, list[list[Cell]]]:
    """Retry-only and each cure (and all of them), by the cure's name."""
    return {c.name: region(base, c, loads, lengths_s, seeds) for c in ALL_CURES}


def render(named: dict[str, list[list[Cell]]]) -> str:
    """The maps side by side as text: a row per load, a column per trigger length."""
    names = list(named)
    first = named[names[0] if names else RETRY_ONLY.name]
    lengths = [c.length_s for c in first[0]] if first else []
    width = max(len(lengths), 1)
    head = "load  " + "  ".join(n.ljust(max(width, len(n))) for n in names)
    lines = [head]
    for i, row in enumerate(first):
        parts = ["".join(c.mark for c in named[n][i]).ljust(max(width, len(n))) for n in names]
        lines.append(f"{row[0].load:4.0%}  " + "  ".join(parts))
    lines.append("trigger lengths (s), a column each: " + ", ".join(f"{x:g}" for x in lengths))
    lines.append(
        "tipped cells: "
        + ", ".join(f"{n} {tipped_cells(named[n])}" for n in names)
        + " ('.' recovered in every run, '#' in none, '~' in some)"
    )
    return "\n".join(lines)


def render_times(name: str, rows: list[list[Cell]]) -> str:
    """One policy's predicted recovery times: the median seconds from the trigger's end to
    goodput back, per cell ('never' when the median run is not back by the load's end)."""
    lengths = [c.length_s for c in rows[0]] if rows else []
    lines = [
        f"{name}: seconds to recover, by trigger length " + " ".join(f"{x:g}" for x in lengths)
    ]
    for row in rows:
        cells = [" never" if c.mark == "#" else f"{c.back_after_s:6.1f}" for c in row]
        lines.append(f"{row[0].load:4.0%} " + "".join(cells))
    return "\n".join(lines)
