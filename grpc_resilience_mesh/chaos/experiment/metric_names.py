"""The metrics an experiment may name, known before anything runs.

An expectation naming a metric nothing measures used to be reported as `n/a` and a FAIL after the
whole run; grpc_resilience_mesh/chaos/experiment/loading.py refuses it at load instead, with the
closest name. Where each metric comes from (the runner measures them; a unit test pins the runner to
these lists):

- every gateway-load phase (fault and recovery): LOAD; `<rpc>_ok_rate`, `<rpc>_p95_ms` and
  `<rpc>_p99_ms` for each RPC in that phase's load; `code.<STATUS>`; COUNTERS;
  `calls.<Method>` for each method of the experiment's `dependency`;
- the fault phase also: FAULT_ONLY (capacity is measured once per run, or
  right before the experiment with `capacity_per_experiment`; `*_vs_steady` divide
  by the same variant's steady state; `fault_exposure` only when the variant has faults; the
  CPU figures only on a mesh this process started); `<rpc>_p95_vs_steady` and
  `<rpc>_p99_vs_steady` for an RPC in both the steady-state and the fault load; CAPACITY
  when the load is open loop (`rate_x_capacity` or `rate_per_s`); what each named check
  declares (grpc_resilience_mesh/chaos/scenarios/declarations.py);
- the recovery phase also: RECOVERY_ONLY;
- a scenario experiment: only what its scenario declares for the variant's params
  (grpc_resilience_mesh/chaos/scenarios/declarations.py), in the fault phase.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

import grpc

from grpc_aio_resilience import KINDS
from grpc_resilience_mesh.chaos.experiment.model import Experiment, Variant, methods
from grpc_resilience_mesh.chaos.experiment.sweep import SWEEP_METRICS
from grpc_resilience_mesh.chaos.registry import CHECKS, SCENARIOS
from grpc_resilience_mesh.services import topology

RPCS = ("home", "checkout")
FATE_METRICS = tuple(f"fate.{kind}" for kind in KINDS)
"""Requests by fate kind (grpc_aio_resilience.fates), in every gateway-load phase."""
LOAD = (
    "requests",
    "ok",
    "full",
    "full_rate",
    "errors",
    "ok_rate",
    "error_rate",
    "degraded",
    "degraded_rate",
    "personalised",
    "total_ms",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "ok_p99_ms",
    "min_ms",
    "goodput_per_s",
    "rejections_without_pushback",
    "served_popular",
    "served_cached_popular",
    "served_omitted",
    *FATE_METRICS,
)
COUNTERS = (
    "dependency_calls",
    "dependency_calls_all",
    "retries",
    "breaker_rejections",
    "breaker_opened",
    "bulkhead_rejections",
    "dependency_bulkhead_rejections",
    "fallbacks",
    "shed",
    "pushbacks_honoured",
    "faults_injected",
)
FAULT_ONLY = (
    "settle_s",
    "aborted",
    "capacity_per_s",
    "capacity_p99_ms",
    "goodput_vs_capacity",
    "ok_p99_vs_capacity",
    "p50_vs_steady",
    "p95_vs_steady",
    "p99_vs_steady",
    "ok_p99_vs_steady",
    "fault_exposure",
    "generator_cpu_ms_per_req",
    "mesh_cpu_ms_per_req",
    "generator_cpu_share",
    "dependency_cpu_busy",
)
CAPACITY = ("offered_per_s",)
RECOVERY_ONLY = ("breakers_not_closed", "probes_to_close")
STATUS_NAMES = tuple(c.name for c in grpc.StatusCode)


def counted(metric: str) -> bool:
    """A count the runner records only when it is not zero (a status, a method, an abort)."""
    return metric.startswith(("code.", "calls.")) or metric == "aborted"


def _rpc_metrics(rpcs: Iterable[str]) -> set[str]:
    return {f"{rpc}_{m}" for rpc in rpcs for m in ("ok_rate", "p95_ms", "p99_ms")}


def _rpc_vs_steady(rpcs: Iterable[str]) -> set[str]:
    return {f"{rpc}_{p}_vs_steady" for rpc in rpcs for p in ("p95", "p99")}


def available(exp: Experiment, variant: Variant, phase: str) -> set[str]:
    """Every metric this phase of this variant measures."""
    if exp.scenario is not None:
        if phase != "fault":
            return set()
        return set(SCENARIOS[exp.scenario].metrics({**exp.params, **variant.params}))
    if phase == "recovery" and exp.recovery is None:
        return set()
    spec = exp.load_for(variant)
    load = spec
    if phase == "recovery" and exp.recovery is not None and exp.recovery.load is not None:
        load = exp.recovery.load  # as the runner: the recovery's own load, else the variant's
    names = {*LOAD, *COUNTERS, *(f"code.{s}" for s in STATUS_NAMES)}
    names |= _rpc_metrics(load.rpc)
    names |= {f"calls.{m}" for m in methods(exp.dependency)}
    if phase == "recovery":
        return names | set(RECOVERY_ONLY)
    names |= set(FAULT_ONLY)
    names |= _rpc_vs_steady(set(spec.rpc) & set(exp.steady_state.load.rpc))
    if spec.rate_x_capacity is not None or spec.rate_per_s is not None:
        names |= set(CAPACITY)
    for check in exp.checks:
        names |= CHECKS[check].metrics
    if exp.sweep is not None:
        names |= set(SWEEP_METRICS) | {f"cpu_ms_per_req.{s.name}" for s in topology.INSTANCES}
    return names


def _everything() -> set[str]:
    """Every metric some experiment could measure (scenario metrics aside)."""
    names = {*LOAD, *COUNTERS, *FAULT_ONLY, *CAPACITY, *RECOVERY_ONLY}
    names |= {f"code.{s}" for s in STATUS_NAMES} | _rpc_metrics(RPCS)
    names |= _rpc_vs_steady(RPCS)
    names |= {f"calls.{m}" for s in topology.SERVICES for m in methods(s.name)}
    for check in CHECKS.values():
        names |= check.metrics
    return names | set(SWEEP_METRICS)


def why_not(metric: str, exp: Experiment, variant: Variant, phase: str) -> str | None:
    """None when `metric` is measured in this phase of this variant, else why not."""
    here = available(exp, variant, phase)
    if metric in here:
        return None
    if exp.scenario is not None:
        if phase != "fault":
            return f"{metric!r}: a scenario experiment has a fault phase only"
        known = f" (scenario {exp.scenario} measures {', '.join(sorted(here))})"
    elif phase == "recovery" and exp.recovery is None:
        return f"{metric!r}: the experiment has no recovery phase (no `recovery:`)"
    elif metric in _everything():
        where = f"variant {variant.name}, phase {phase}"
        return f"{metric!r} is not measured in {where}: {_reason(metric, exp, phase)}"
    else:
        known = ""
    close = difflib.get_close_matches(metric, sorted(here), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown metric {metric!r}{known}{hint}"


def _reason(metric: str, exp: Experiment, phase: str) -> str:
    for name, check in CHECKS.items():
        if metric in check.metrics:
            if phase != "fault":
                return f"the check {name} measures the fault phase only"
            return f"it comes from the check {name}, which `checks:` does not name"
    if metric in CAPACITY:
        return "measured only when the load is open loop (rate_x_capacity or rate_per_s)"
    if metric in RECOVERY_ONLY:
        return "measured in the recovery phase only"
    rpc_vs_steady = metric.endswith(("_p95_vs_steady", "_p99_vs_steady"))
    if metric in FAULT_ONLY or (rpc_vs_steady and phase != "fault"):
        return "measured in the fault phase only"
    if metric.startswith("calls."):
        return f"{exp.dependency} serves {', '.join(methods(exp.dependency))}"
    if rpc_vs_steady:
        return "that RPC is not in both the steady-state and the fault load"
    return "that RPC is not in this phase's load"
