"""The four-panel: the experiment file's variants read as the model's systems, beside the
published outcomes of Huang et al.'s retry runs (OSDI 2022, lexiangh/Metastability,
Retry_Metastability/client/experiments.sh)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from grpc_resilience_mesh.chaos.experiment.fault_kinds import SlowdownFault
from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import Experiment, Variant
from grpc_resilience_mesh.chaos.metastable.cures import FULL, RETRY_ONLY
from grpc_resilience_mesh.chaos.metastable.system import System, Trigger

FOUR_PANEL = "metastable-four-panel"

PUBLISHED = {
    "baseline": "recovered",
    "tipping": "tipped",
    "shorter-trigger": "recovered",
    "less-load": "recovered",
}
"""The artifact's runs (a)-(d): MongoDB primary's CPU cut from 2 vCPU to 0.45 (-78%) for
10 s, recovered; to 0.40 (-80%) for 10 s, metastable; to 0.40 for 9 s, recovered; to 0.40
for 10 s with one insert every 100 us instead of 75 us, recovered. Clients: open loop, 3 s
timeout, up to 4 immediate resends; the server finishes the inserts of clients who left."""


@dataclass(frozen=True)
class Panel:
    """A variant of the four-panel as the model sees it."""

    name: str
    published: str
    system: System


def _get(tree: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        tree = tree.get(key) or {}
    return tree


def system_for(exp: Experiment, variant: Variant, base: System | None = None) -> System:
    """The model's system at the numbers the variant runs the mesh with."""
    system = base or System()
    load = exp.load_for(variant)
    rate = load.rate_per_s or system.rate_per_s
    slowdown = next(f for f in exp.faults_for(variant) if isinstance(f, SlowdownFault))
    pool = _get(variant.overrides, "servers", "recommendation", "pool")
    deadline = _get(variant.overrides, "edges", "gateway_to_recommendation", "deadline")
    return replace(
        system,
        rate_per_s=rate,
        duration_s=load.requests / rate,
        workers=int(pool.get("workers", system.workers)),
        service_time_s=float(pool.get("service_time_s", system.service_time_s)),
        sigma=float(pool.get("sigma", system.sigma)),
        max_queue=int(pool.get("max_queue", system.max_queue)),
        attempt_s=float(deadline.get("attempt_s", system.attempt_s)),
        total_s=float(deadline.get("total_s", system.total_s)),
        trigger=Trigger(slowdown.factor, slowdown.start_s, slowdown.stop_s or slowdown.start_s),
        cures=FULL if variant.policy == "full" else RETRY_ONLY,
    )


def panels_of(name_or_path: str, base: System | None = None) -> list[Panel]:
    """Every variant of an experiment file as a panel ('' published when the artifact has no
    run for it)."""
    _, exp = load_experiment(name_or_path)
    return [
        Panel(v.name, PUBLISHED.get(v.name, ""), system_for(exp, v, base)) for v in exp.variants
    ]


def four_panel(base: System | None = None) -> list[Panel]:
    """The catalogue's four-panel, panel by panel."""
    return panels_of(FOUR_PANEL, base)
