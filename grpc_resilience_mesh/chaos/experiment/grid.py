"""An overload grid: one sweep experiment per backend (workers x service time x attempt
deadline), each at the same offered loads, so a lesson is checked at many numbers, not one.

A grid file (grpc_resilience_mesh/chaos/grids/) holds `grid:` and, under `experiment:`, a sweep
experiment without its `sweep:` numbers: its lines (variants) and columns. Each cell becomes
that experiment with the cell's pool, its deadlines scaled to the service time (attempt d x S,
call 2 x attempt, the user's 2.5 x attempt) and its load points; a point whose offered rate
exceeds `ceiling_share` of the mesh's own closed-loop capacity (the gateway's ceiling on this
machine) is left out and listed, so that the declared capacity, not the CPU, is what binds.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from itertools import product
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from grpc_resilience_mesh.chaos.experiment.sweep import point_name
from grpc_resilience_mesh.services import topology

REPLICAS = topology.REPLICAS.get("recommendation", 1)
EDGE = "gateway_to_recommendation"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GridAxes(_Model):
    """The backends and loads of a grid (or of its `quick` form)."""

    workers: list[int] = Field(min_length=1, description="per replica, each in 1..20")
    service_time_s: list[float] = Field(min_length=1, description="each in 0.05..1 s")
    offered_x: list[float] = Field(min_length=1, description="x the capacity, each in 1.5..10")
    deadline_x_service: list[float] = Field(min_length=1, description="attempt, each in 2..4")

    def model_post_init(self, _: Any) -> None:
        ranges = (
            ("workers", self.workers, 1, 20),
            ("service_time_s", self.service_time_s, 0.05, 1.0),
            ("offered_x", self.offered_x, 1.5, 10.0),
            ("deadline_x_service", self.deadline_x_service, 2.0, 4.0),
        )
        for name, values, low, high in ranges:
            for value in values:
                if not low <= value <= high:
                    raise ValueError(f"grid.{name}: {value:g} is not in [{low:g}, {high:g}]")


class Claim(_Model):
    """What must hold at every cell: these lines keep goodput >= min_goodput of capacity,
    none collapses (goodput below collapse_below of capacity: the issue's 0 of 768 homes),
    and the homes they serve in full finish within the call's deadline (accepted p99 <=
    `call_s`: the attempt's and one retry's, as an accepted home may be served on its retry
    after a refusal's pushback; each attempt is cut at its own deadline by the edge)."""

    lines: list[str] = Field(min_length=1)
    min_goodput: float = Field(default=0.9, gt=0, le=1)
    collapse_below: float = Field(default=0.5, gt=0, le=1)


class Grid(GridAxes):
    """The full grid, its quick form (a few cells a test can run) and the mesh's ceiling."""

    quick: GridAxes
    claim: Claim
    ceiling_share: float = Field(
        default=0.5, gt=0, le=1, description="of the mesh's closed-loop homes/s a point may offer"
    )
    gateway_ceiling_per_s: float = Field(
        gt=0, description="the mesh's closed-loop homes/s on this machine (the runner's probe)"
    )


@dataclass(frozen=True)
class Cell:
    """One backend of the grid."""

    workers: int
    service_time_s: float
    deadline_x: float

    @property
    def capacity_per_s(self) -> float:
        return REPLICAS * self.workers / self.service_time_s

    @property
    def attempt_s(self) -> float:
        return round(self.deadline_x * self.service_time_s, 6)

    @property
    def call_s(self) -> float:
        """The edge's total deadline: two attempts."""
        return round(2 * self.attempt_s, 6)

    @property
    def name(self) -> str:
        ms = round(self.service_time_s * 1000)
        return f"grid-w{self.workers}-s{ms}ms-d{self.deadline_x:g}".replace(".", "_")


@dataclass(frozen=True)
class LeftOut:
    """A cell's load point not run: its offered rate exceeds what the mesh's CPU carries."""

    cell: Cell
    offered_x: float
    rate_per_s: float


def cells(axes: GridAxes) -> list[Cell]:
    return [
        Cell(w, s, d)
        for w, s, d in product(axes.workers, axes.service_time_s, axes.deadline_x_service)
    ]


def plan(
    grid: Grid, quick: bool, ceiling_per_s: float | None = None
) -> tuple[list[tuple[Cell, list[float]]], list[LeftOut]]:
    """Each cell with the load points the mesh can carry, and the points left out."""
    axes = grid.quick if quick else grid
    most = grid.ceiling_share * (ceiling_per_s or grid.gateway_ceiling_per_s)
    runs: list[tuple[Cell, list[float]]] = []
    left: list[LeftOut] = []
    for cell in cells(axes):
        points = [x for x in axes.offered_x if x * cell.capacity_per_s <= most]
        left += [
            LeftOut(cell, x, x * cell.capacity_per_s) for x in axes.offered_x if x not in points
        ]
        if points:
            runs.append((cell, points))
    return runs, left


def _with_deadlines(line: dict[str, Any], cell: Cell) -> dict[str, Any]:
    line = copy.deepcopy(line)
    edges = line.setdefault("overrides", {}).setdefault("edges", {})
    edge = edges.setdefault(EDGE, {})
    edge["deadline"] = {"attempt_s": cell.attempt_s, "total_s": cell.call_s}
    return line


def cell_experiment(base: dict[str, Any], cell: Cell, points: list[float]) -> dict[str, Any]:
    """The grid's experiment for one cell: its pool, deadlines, loads and expectations."""
    user_s = round(2.5 * cell.attempt_s, 6)
    warmup_s = max(3.0, 2 * cell.attempt_s)
    duration_s = warmup_s + max(5.0, 5 * cell.service_time_s)
    round_of = REPLICAS * cell.workers
    exp = copy.deepcopy(base)
    exp["title"] = f"{base.get('title', 'grid')}: {cell.name}"
    exp["sweep"] = {
        "service": "recommendation",
        "workers": cell.workers,
        "service_time_s": cell.service_time_s,
        "points": points,
        "duration_s": duration_s,
        "warmup_s": warmup_s,
    }
    exp["load"] = {**base.get("load", {}), "deadline_s": user_s}
    exp["steady_state"] = {
        "load": {
            "rpc": ["home"],
            "requests": round_of,
            "concurrency": round_of,
            "deadline_s": user_s,
        }
    }
    exp["variants"] = [_with_deadlines(line, cell) for line in base["variants"]]
    return exp


def with_claim(
    exp: dict[str, Any], claim: Claim, points: list[float], cell: Cell
) -> dict[str, Any]:
    """The cell's experiment with the claim as its expectations (per line and point: the
    goodput, and the accepted p99 within the call's deadline, Cell.call_s)."""
    why = "the claim: an adaptive limit keeps the backend's goodput near its capacity"
    late = "the claim: what the limit admits finishes within the call's deadline"
    exp["expectations"] = [
        expectation
        for line in claim.lines
        for x in points
        for expectation in (
            {
                "variant": point_name(line, x),
                "metric": "goodput_vs_declared",
                "min": claim.min_goodput,
                "why": why,
            },
            {
                "variant": point_name(line, x),
                "metric": "accepted_p99_ms",
                "max": round(cell.call_s * 1000, 3),
                "why": late,
            },
        )
    ]
    return exp


def planned_s(runs: list[tuple[Cell, list[float]]], lines: int) -> float:
    """The loads' seconds (a lower bound on the run: steady checks and swaps come on top)."""
    total = 0.0
    for cell, points in runs:
        warmup_s = max(3.0, 2 * cell.attempt_s)
        total += lines * len(points) * (warmup_s + max(5.0, 5 * cell.service_time_s))
    return math.ceil(total)
