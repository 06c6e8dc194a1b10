"""An overload grid's report: per line a heat map (backend cells x offered load) of goodput (of
the declared capacity) and accepted p99, the claim checked at every cell, each miss named with
the mechanism its figures point to, and the load points left out for the mesh's ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpc_resilience_mesh.chaos.experiment.grid import Cell, Claim, LeftOut
from grpc_resilience_mesh.chaos.experiment.sweep import point_name

Metrics = dict[str, float]


@dataclass(frozen=True)
class CellRun:
    """One cell's measured figures: each point variant's fault-phase metrics, by name."""

    cell: Cell
    points: list[float]
    metrics: dict[str, Metrics]


@dataclass(frozen=True)
class Miss:
    cell: Cell
    line: str
    offered_x: float
    goodput: float | None
    mechanism: str
    collapsed: bool = False
    late_ms: float | None = None
    """The accepted p99 when it exceeds the call's deadline (Cell.call_s)."""


def mechanism(m: Metrics, cell: Cell) -> str:
    """The mechanism a missed point's figures point to (a reading of them, not a proof)."""
    p99_s = m.get("accepted_p99_ms", 0.0) / 1000
    if "accepted_p99_ms" not in m:
        return (
            "nothing served in time: the admitted calls queue past the attempt deadline "
            f"(more admitted than {cell.workers} workers x {cell.deadline_x:g} service times)"
        )
    if p99_s > cell.attempt_s:
        return (
            f"retries: accepted p99 {p99_s:.2f} s, above one {cell.attempt_s:g} s attempt, so "
            "the tail was served on a retry after a refusal or a timeout"
        )
    if p99_s > 0.8 * cell.attempt_s:
        return (
            f"queueing to the deadline: accepted p99 {p99_s:.2f} s of a {cell.attempt_s:g} s "
            "attempt, so the tail of the admitted queue misses it"
        )
    refusals = m.get("backend_refusals_per_accepted", 0.0)
    return (
        f"idle workers: accepted calls are fast (p99 {p99_s:.2f} s) but too few; the limit "
        f"sits below the {cell.workers} workers or refuses work that fits "
        f"({refusals:.1f} refusals per accepted call)"
    )


def misses(runs: list[CellRun], claim: Claim) -> list[Miss]:
    """Each point of a claimed line whose goodput is under the claim's, or whose accepted
    p99 exceeds the call's deadline."""
    found: list[Miss] = []
    for run in runs:
        for line in claim.lines:
            for x in run.points:
                m = run.metrics.get(point_name(line, x), {})
                goodput = m.get("goodput_vs_declared")
                p99_ms = m.get("accepted_p99_ms")
                late = p99_ms if p99_ms and p99_ms > run.cell.call_s * 1000 else None
                if goodput is None or goodput < claim.min_goodput or late is not None:
                    collapsed = goodput is None or goodput < claim.collapse_below
                    why = mechanism(m, run.cell)
                    found.append(Miss(run.cell, line, x, goodput, why, collapsed, late))
    return found


def _cell_label(cell: Cell) -> str:
    return f"{cell.workers} x {cell.service_time_s * 1000:g} ms, d {cell.deadline_x:g}"


def heat_map(runs: list[CellRun], line: str, loads: list[float]) -> list[str]:
    """One line's table: a row per cell, a column per load, `goodput / p99 ms` per point."""
    head = "| backend (workers/replica x service, attempt d x service) | " + " | ".join(
        f"{x:g}x" for x in loads
    )
    rows = [head + " |", "|---|" + "---|" * len(loads)]
    for run in runs:
        shown = []
        for x in loads:
            m = run.metrics.get(point_name(line, x))
            if x not in run.points or m is None:
                shown.append("(left out)" if x not in run.points else "-")
                continue
            goodput = m.get("goodput_vs_declared")
            p99 = m.get("accepted_p99_ms")
            shown.append(
                f"{'-' if goodput is None else f'{goodput:.2f}'} / "
                f"{'-' if p99 is None else f'{p99:.0f}'}"
            )
        rows.append(f"| {_cell_label(run.cell)} | " + " | ".join(shown) + " |")
    return rows


def grid_report(
    runs: list[CellRun],
    lines: list[str],
    loads: list[float],
    claim: Claim,
    left_out: list[LeftOut],
    ceiling: str,
) -> str:
    """The grid's markdown: heat maps, the claim's verdict with its misses, points left out."""
    out = ["# Overload grid", "", f"Mesh ceiling: {ceiling}.", ""]
    for line in lines:
        out += [f"## {line}: goodput (of capacity) / accepted p99 ms", ""]
        out += [*heat_map(runs, line, loads), ""]
    found = misses(runs, claim)
    checked = sum(len(r.points) for r in runs) * len(claim.lines)
    collapsed = sum(m.collapsed for m in found)
    out += [
        f"## Claim: {', '.join(claim.lines)} keep goodput >= {claim.min_goodput:g} of capacity, "
        f"none collapses (goodput < {claim.collapse_below:g}), accepted p99 <= the call's "
        "deadline (2 attempts)",
        "",
        f"{checked - len(found)} of {checked} points held; {collapsed} collapsed.",
        "",
    ]
    out += [_miss_line(miss) for miss in found]
    out += ["", "## Left out (offered rate above the mesh's ceiling share)", ""]
    out += [
        f"- {_cell_label(o.cell)} at {o.offered_x:g}x: {o.rate_per_s:.0f} homes/s" for o in left_out
    ] or ["- none"]
    return "\n".join(out) + "\n"


def _miss_line(miss: Miss) -> str:
    goodput = "n/a" if miss.goodput is None else f"{miss.goodput:.2f}"
    marks = " (COLLAPSE)" if miss.collapsed else ""
    if miss.late_ms is not None:
        marks += f", accepted p99 {miss.late_ms:.0f} ms > {miss.cell.call_s * 1000:g} ms"
    return (
        f"- MISS {miss.line} at {miss.offered_x:g}x on {_cell_label(miss.cell)}: "
        f"goodput {goodput}{marks}; {miss.mechanism}"
    )
