"""Recovered or tipped: the recovery criterion the lab applies to the mesh and to the model.

Both read goodput the same way (chaos/scenarios/goodput.py: full answers per second over 2 s
windows, 0.1 s apart) and the same levels (recovery_check.recovery_metrics), so a predicted
and a measured recovery time are the same quantity."""

from __future__ import annotations

from collections.abc import Mapping

from grpc_resilience_mesh.chaos.metastable.model import SimResult
from grpc_resilience_mesh.chaos.metastable.system import System
from grpc_resilience_mesh.chaos.scenarios.recovery_check import recovery_metrics

RECOVERED_WITHIN_S = 5.0
"""Recovered: goodput back at >= 95% of its pre-trigger level, and never again below half
of it, within this long after the trigger ends. 5 s is 2.5 drains of a full queue at the
normal load's spare capacity (80 calls at 40 - 28 = 12 calls/s takes 6.7 s, so a storm
that merely drains is not mistaken for one that never began) and a quarter of the 20 s the
tipped state must outlast the trigger to count as tipped."""


def recovered(metrics: Mapping[str, float]) -> bool:
    """The criterion on a recovery check's metrics (measured or modelled)."""
    back = metrics.get("back", 0.0) >= 1.0
    return back and metrics.get("back_after_trigger_s", math_inf()) <= RECOVERED_WITHIN_S


def math_inf() -> float:
    return float("inf")


def model_metrics(system: System, result: SimResult) -> dict[str, float]:
    """The recovery check's metrics on a model run, plus its own counters."""
    window = (system.trigger.start_s, system.trigger.stop_s)
    out = recovery_metrics(result.done, window, system.capacity_per_s)
    homes = max(1, result.homes)
    out["attempts_per_call"] = result.attempts / homes
    out["abandoned_work"] = float(result.abandoned)
    out["pool_refused"] = float(result.refused)
    out["throttled"] = float(result.throttled)
    return out


def outcome_word(metrics: Mapping[str, float]) -> str:
    return "recovered" if recovered(metrics) else "tipped"
