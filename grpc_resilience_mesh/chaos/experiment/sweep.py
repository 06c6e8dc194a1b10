"""A sweep: every variant (a line of the curve) run at several multiples of a declared capacity.

An experiment with `sweep:` names the backend's declared capacity (`workers` per replica, each
busy `service_time_s` per call: replicas x workers / service_time_s calls per second, whatever
the CPU does) and the load points, as multiples of it. Before validation each variant of the
file becomes one variant per point, `<line>.<x>x`, whose policy also declares the pool and
whose load is open loop at x times the capacity for `duration_s`. Expectations name the
expanded variants (e.g. `gradient2.5x`). `short` is the demo's: fewer points and lines (a line
may keep fewer points than the others: `line_points`), a shorter load.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from grpc_resilience_mesh.chaos.experiment.bounds import MAX_SWEEP_POINTS, MAX_VARIANTS
from grpc_resilience_mesh.services import topology
from grpc_resilience_mesh.services.policy.loading import deep_merge

MAX_IN_FLIGHT = 512
"""The load generator's bound on calls in flight (LoadSpec.concurrency's maximum)."""

SWEEP_METRICS = (
    "offered_x_capacity",
    "declared_capacity_per_s",
    "window_goodput_per_s",
    "goodput_vs_declared",
    "accepted_p50_ms",
    "accepted_p99_ms",
    "accepted_p99_vs_low",
    "backend_refusals",
    "backend_accepted",
    "backend_refusals_per_accepted",
    "gateway_cpu_ms_per_req",
    "gateway_cpu_vs_capacity",
    "busiest_process_busy",
)
"""What grpc_resilience_mesh/chaos/run/sweep_metrics.py adds to each point's fault phase."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ShortSweep(_Model):
    """The demo's sweep: a subset of the points and lines, a shorter load per point."""

    points: list[float] = Field(min_length=1)
    lines: list[str] = Field(min_length=1)
    duration_s: float = Field(gt=0, le=60)
    line_points: dict[str, list[float]] = Field(
        default={},
        description="a line's own points (some of `points`), where the demo's expectations "
        "need fewer for it (e.g. only the point its bound reads)",
    )

    def points_of(self, line: str) -> list[float]:
        return self.line_points.get(line, self.points)


class Sweep(_Model):
    """The capacity-declared backend and the load points of the curve."""

    service: str = Field(default="recommendation", description="the backend with the pool")
    workers: int = Field(ge=1, le=10_000, description="the pool's workers per replica")
    service_time_s: float = Field(gt=0, le=60, description="a worker's time per call (mean)")
    points: list[float] = Field(
        min_length=1,
        description=f"offered load, x the capacity: 1 to {MAX_SWEEP_POINTS} points in (0, 20]",
    )
    duration_s: float = Field(default=4.0, gt=0, le=60, description="load per point")
    warmup_s: float = Field(
        default=1.0, ge=0, le=30, description="dropped from the windowed figures"
    )
    short: ShortSweep | None = None

    @field_validator("points", mode="before")
    @classmethod
    def _few_points(cls, value: object) -> object:
        """Counted before a point is read: a file of 10,000 is refused at once."""
        if isinstance(value, list) and len(value) > MAX_SWEEP_POINTS:
            raise ValueError(
                f"{len(value)} points, at most {MAX_SWEEP_POINTS}: a curve is read from a "
                "handful (the catalogue's has 5), and each point is a variant of every line"
            )
        return value

    @model_validator(mode="after")
    def _check(self) -> Sweep:
        if self.service not in topology.REPLICAS and self.service != "recommendation":
            raise ValueError(f"service {self.service!r}: only recommendation declares a pool")
        for x in self.points:
            if not 0 < x <= 20:
                raise ValueError(f"points: {x:g} is not in (0, 20] x the capacity")
        for duration_s in (self.duration_s, *([self.short.duration_s] if self.short else [])):
            if self.warmup_s >= duration_s:
                raise ValueError("warmup_s must be below duration_s (nothing would be measured)")
        if self.short is not None:
            self._check_short(self.short)
        return self

    def _check_short(self, short: ShortSweep) -> None:
        if not set(short.points) <= set(self.points):
            raise ValueError("short.points must be some of points")
        for line, points in short.line_points.items():
            if line not in short.lines:
                raise ValueError(f"short.line_points: {line!r} is not one of short.lines")
            if not points or not set(points) <= set(short.points):
                raise ValueError(f"short.line_points.{line} must be some of short.points")

    @property
    def replicas(self) -> int:
        return topology.REPLICAS.get(self.service, 1)

    @property
    def capacity_per_s(self) -> float:
        """replicas x workers / service_time_s: the calls per second the backend can serve."""
        return self.replicas * self.workers / self.service_time_s


def point_name(line: str, x: float) -> str:
    return f"{line}.{x:g}x"


def _point(line: dict[str, Any], sweep: Sweep, x: float, duration_s: float) -> dict[str, Any]:
    rate = x * sweep.capacity_per_s
    pool = {
        "servers": {
            sweep.service: {
                "pool": {"workers": sweep.workers, "service_time_s": sweep.service_time_s}
            }
        }
    }
    load = {
        **line.get("load", {}),
        "rate_per_s": rate,
        "requests": max(1, math.ceil(rate * duration_s)),
        "concurrency": MAX_IN_FLIGHT,
        "max_duration_s": duration_s + 5,
        "rate_x_capacity": None,
    }
    return {
        **line,
        "name": point_name(str(line["name"]), x),
        "overrides": deep_merge(line.get("overrides", {}), pool),
        "load": load,
        "description": f"{line.get('description', line['name'])} at {x:g}x",
    }


def _with_demo_load(variant: Any) -> Any:
    """A raw variant with its `demo_load` merged over its `load` and its `demo_faults` in place
    of its faults (the demo's form of it)."""
    if not isinstance(variant, dict):
        return variant
    demo = dict(variant)
    if isinstance(variant.get("demo_load"), dict):
        load = variant.get("load")
        demo["load"] = {**(load if isinstance(load, dict) else {}), **variant["demo_load"]}
    if isinstance(variant.get("demo_faults"), list):
        demo["faults"] = variant["demo_faults"]
    return demo


def demo_subset(data: Any) -> Any:
    """The raw experiment with only its `demo_variants` and their expectations (all without),
    each kept variant's `demo_load` over its `load`; a scenario's declared `expected_s` (all
    variants) scaled to the ones kept."""
    keep = data.get("demo_variants") if isinstance(data, dict) else None
    variants = data.get("variants") if isinstance(data, dict) else None
    if not isinstance(variants, list):
        return data
    if not keep or not isinstance(keep, list):
        return {**data, "variants": [_with_demo_load(v) for v in variants]}
    expectations = data.get("expectations") or []
    kept = [
        _with_demo_load(v) for v in variants if not isinstance(v, dict) or v.get("name") in keep
    ]
    subset = {
        **data,
        "variants": kept,
        "expectations": [
            e for e in expectations if not isinstance(e, dict) or e.get("variant") in keep
        ],
    }
    declared = data.get("expected_s")  # all variants': the subset's share of it
    if isinstance(declared, int | float) and not isinstance(declared, bool) and variants:
        subset["expected_s"] = declared * len(kept) / len(variants)
    return subset


def expand(data: Any, short: bool = False) -> Any:
    """The raw experiment with its variants expanded per point (unchanged without `sweep`);
    `short` (the demo's form): the sweep's `short` points and lines, or `demo_variants`."""
    if short:
        data = demo_subset(data)
    if not isinstance(data, dict) or data.get("sweep") is None:
        check_variant_count(data)
        return data
    sweep = _sweep(data["sweep"])
    lines = data.get("variants") or []
    if not isinstance(lines, list) or not all(isinstance(v, dict) and "name" in v for v in lines):
        return data  # the schema names the problem
    duration_s = sweep.duration_s
    points_of = {str(line["name"]): sweep.points for line in lines}
    if short and sweep.short is not None:
        duration_s = sweep.short.duration_s
        lines = [v for v in lines if v["name"] in sweep.short.lines]
        points_of = {str(line["name"]): sweep.short.points_of(line["name"]) for line in lines}
    count = sum(len(points_of[str(line["name"])]) for line in lines)
    if count > MAX_VARIANTS:
        raise ValueError(
            f"variants: {len(lines)} lines x {len(sweep.points)} points = {count} variants, "
            f"at most {MAX_VARIANTS} (each is a policy swap, its loads and a row of the report)"
        )
    expanded = [
        _point(line, sweep, x, duration_s) for line in lines for x in points_of[str(line["name"])]
    ]
    names = {v["name"] for v in expanded}
    expectations = data.get("expectations") or []
    if short and isinstance(expectations, list):  # the demo's points only
        expectations = [
            e for e in expectations if not isinstance(e, dict) or e.get("variant") in names
        ]
    return {**data, "variants": expanded, "expectations": expectations}


def _sweep(raw: Any) -> Sweep:
    """The sweep, its errors placed under `sweep.` (validated here, before the experiment's
    own fields, since its points become the experiment's variants)."""
    try:
        return Sweep.model_validate(raw)
    except ValidationError as err:
        errors: list[Any] = [
            {"type": e["type"], "loc": ("sweep", *e["loc"]), "input": e["input"]}
            | ({"ctx": e["ctx"]} if "ctx" in e else {})
            for e in err.errors()
        ]
        raise ValidationError.from_exception_data("Sweep", errors) from None


def check_variant_count(data: Any) -> None:
    """At most MAX_VARIANTS variants, counted before any is validated."""
    variants = data.get("variants") if isinstance(data, dict) else None
    if isinstance(variants, list) and len(variants) > MAX_VARIANTS:
        raise ValueError(
            f"variants: {len(variants)} variants, at most {MAX_VARIANTS} (each is a policy "
            "swap, its loads and a row of the report)"
        )
