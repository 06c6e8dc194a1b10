"""A run's plan: each experiment's seconds as its files schedule them, before anything starts.

What the files fix: each variant's loads (steady state before and after, the load under fault, the
recovery phase; grpc_resilience_mesh.chaos.experiment.planned, which also counts a per-variant
overhead and guesses a closed loop's latency), a sweep's declared service time, the capacity
measurement (once per RPC mix per run, or for each experiment whose load has
`capacity_per_experiment`; at most CALIBRATION_S; in the demo's form only where a figure of it is
read: capacity_use.py), and the services' restarts into and out of xDS (a
variant with `xds: true` after one without, or the other way round, across experiment boundaries:
the mesh stays as the last variant left it). What they cannot fix (how long a backlog takes to
drain, a steady state that has to be probed again, how loaded the machine is) is the measured run's
overhead on top. Where a run measured an experiment in the same form (measured.py), its loads are
the measured seconds instead, all of them counted as fixed. `mesh chaos plan` prints it; the demo's
progress line starts from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.experiment.planned import fixed_s, planned_loads_s
from grpc_resilience_mesh.chaos.run.capacity_use import probed_mixes
from grpc_resilience_mesh.chaos.run.measured import MEASURED, Measured, measured_loads_s

CALIBRATION_S = 3.0
"""The capacity probe (grpc_resilience_mesh/chaos/run/runner.py) stops after `capacity_requests`
calls or this long, whichever first: a closed loop's goodput is steady within a second or two, and
`make demo` has 5 minutes. Here, with the plan that counts it, so `mesh chaos plan` loads no
runner."""

RESTART_S = 3.0
"""Every service stopped and started again (grpc_resilience_mesh/launch/restarts.py): the services
but the gateway in parallel, then the gateway, about 1 s each on an idle 2-core machine
(docs/results/startup.md: exec -> SERVING 0.98 s), plus the stop."""


@dataclass(frozen=True)
class Planned:
    """One experiment's planned seconds, by what they are spent on."""

    name: str
    variants: int
    loads_s: float
    restarts: int
    capacity_s: float
    fixed_s: float = 0.0
    """The part of loads_s the files fix (planned.fixed_s), or all of it when measured."""
    measured: bool = False
    """loads_s is a run's measurement (measured.py), not the files' count."""

    @property
    def restarts_s(self) -> float:
        return self.restarts * RESTART_S

    @property
    def total_s(self) -> float:
        return self.loads_s + self.restarts_s + self.capacity_s


def plan(
    experiments: Iterable[tuple[str, Experiment]],
    xds: bool = False,
    xds_runs: bool = True,
    measured: Sequence[Measured] = MEASURED,
) -> list[Planned]:
    """The experiments in the order they run, on one mesh that starts with `xds` (as
    `mesh chaos run --xds` does) or without. `xds_runs` False: the xDS variants are skipped
    (no mesh-xds built, as on a fresh clone's `make demo`): neither their loads nor restarts.
    `measured`: the runs whose seconds replace the files' guesses (empty: the files alone)."""
    probed: set[tuple[str, ...]] = set()
    out = []
    for name, exp in experiments:
        if not xds_runs:
            exp = exp.model_copy(update={"variants": [v for v in exp.variants if not v.xds]})
        restarts = 0
        for variant in exp.variants:
            if variant.xds != xds:
                restarts += 1
                xds = variant.xds
        mixes = probed_mixes(exp)
        if not exp.load.capacity_per_experiment:
            mixes -= probed
        probed |= mixes
        loads_s, fixed = planned_loads_s(exp), fixed_s(exp)
        took = measured_loads_s(exp, loads_s, measured)
        if took is not None:
            loads_s = fixed = took
        capacity_s = len(mixes) * CALIBRATION_S
        out.append(
            Planned(name, len(exp.variants), loads_s, restarts, capacity_s, fixed, took is not None)
        )
    return out


def minutes(seconds: float) -> str:
    """'5 min 40 s', '42 s'."""
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60:02d} s" if whole >= 60 else f"{whole} s"
