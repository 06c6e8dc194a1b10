"""Measuring: the numbers a phase's load and counters give, probes, and the verdicts.

Pure functions of what was collected (outcomes, counter deltas, the experiment's
expectations): no network, no clock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from grpc_resilience_mesh.chaos.experiment.metric_names import counted
from grpc_resilience_mesh.chaos.experiment.model import (
    AppFault,
    Experiment,
    Fault,
    KillFault,
    Probe,
    ProxyDownFault,
    SlowdownFault,
    ToxicFault,
    Variant,
)
from grpc_resilience_mesh.chaos.results import ExperimentResult, PhaseResult, Verdict
from grpc_resilience_mesh.chaos.run.fate_metrics import fate_metrics, fate_verdicts
from grpc_resilience_mesh.chaos.run.sweep_metrics import add_sweep_metrics
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult, percentile
from grpc_resilience_mesh.services import topology

VS_STEADY = (
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "ok_p99_ms",
    "home_p95_ms",
    "checkout_p95_ms",
    "home_p99_ms",
    "checkout_p99_ms",
)
"""Latencies compared with the same variant's steady state of the same run: `<name>_vs_steady`
(e.g. p50_vs_steady = fault p50 / steady p50)."""


def vs_steady(fault: dict[str, float], steady: dict[str, float]) -> dict[str, float]:
    """Each VS_STEADY latency of the fault phase divided by the same variant's steady state
    (measured just before, in the same run); absent when either side is missing or 0."""
    out = {}
    for name in VS_STEADY:
        base = steady.get(name)
        if base and name in fault:
            out[name.removesuffix("_ms") + "_vs_steady"] = fault[name] / base
    return out


def exposure(
    exp: Experiment,
    variant: Variant,
    counters: Snapshot,
    while_on: Mapping[int, float] | None = None,
) -> float | None:
    """How many requests met the variant's faults, from the services' counters; None when it
    has none (or a scenario drives it). Per fault type:

    - app_fault with an error_rate only: the calls its service's fault interceptor failed
      (mesh_faults_injected_total on that service);
    - app_fault with a delay_s, and slowdown: the calls its service received on the faulted
      method, every method for a slowdown (mesh_server_calls_total): every one is held, and
      one cancelled while held is never counted as injected (the interceptor counts a delay
      when it ends);
    - toxic and proxy_down: the attempts the edge's caller sent to its dependency
      (mesh_client_attempts_total{dependency}) while that fault was on: `while_on`, by the
      fault's position, read as it went on and off (AttemptsWhileOn). Each crossed the
      faulted proxy while the toxic was on it (at toxicity 1, the only one allowed on gRPC
      edges) or the proxy was disabled. An attempt already in flight when the fault went on
      counts when it was sent before: that one may have crossed before the toxic did. Without
      `while_on`, the whole phase's attempts;
    - xds (A33): the attempts the edge's caller sent to its dependency in the phase: each went
      through gRPC's fault filter (a method's fault: only that method's were at risk).
    """
    faults = exp.faults_for(variant)
    if not faults or exp.scenario is not None:
        return None
    met = 0.0
    for index, fault in enumerate(faults):
        if while_on is not None and index in while_on:
            met += while_on[index]
        elif isinstance(fault, SlowdownFault) or (isinstance(fault, AppFault) and fault.delay_s):
            met += _received(counters, fault.service, fault.full_method)
        elif isinstance(fault, AppFault):
            met += counters.total("mesh_faults_injected_total", fault.service)
        elif isinstance(fault, KillFault):  # every caller's attempts to that service
            met += counters.total(
                "mesh_client_attempts_total", dependency=topology.replica_of(fault.service)
            )
        else:  # an edge, or one replica's proxy of it
            edge = next(
                e
                for e in topology.EDGES
                if fault.edge in (p.name for p in topology.edge_proxies(e))
            )
            met += counters.total(
                "mesh_client_attempts_total", edge.caller, dependency=edge.dependency
            )
    return met


def _received(counters: Snapshot, service: str, method: str) -> float:
    """Calls `service` received on `method` (a full /pkg.Service/Method name, or *)."""
    if method == "*":
        return counters.total("mesh_server_calls_total", service)
    return counters.total("mesh_server_calls_total", service, method=method)


def crossing_attempts(counters: Snapshot, edge_name: str) -> float:
    """The attempts sent across `edge_name` (an edge, or one replica's proxy of it): its
    caller's mesh_client_attempts_total to its dependency."""
    edge = next(
        e
        for e in topology.EDGES
        if edge_name == e.name or edge_name in (p.name for p in topology.edge_proxies(e))
    )
    return counters.total("mesh_client_attempts_total", edge.caller, dependency=edge.dependency)


@dataclass
class AttemptsWhileOn:
    """The Injector's observer: for each toxic or proxy_down of a phase (by its position in
    `faults`), the attempts sent across its edge while it was on, its counter read as it
    went on and as it went off (a proxy_down that cycles adds each down spell)."""

    faults: list[Fault]
    read: Callable[[], Awaitable[Snapshot]]
    totals: dict[int, float] = field(default_factory=dict)
    _since: dict[int, float] = field(default_factory=dict)

    def _index(self, fault: Fault) -> int | None:
        if not isinstance(fault, ToxicFault | ProxyDownFault):
            return None
        return next((i for i, f in enumerate(self.faults) if f is fault), None)

    async def observe(self, fault: Fault, on: bool) -> None:
        index = self._index(fault)
        if index is None or not isinstance(fault, ToxicFault | ProxyDownFault):
            return
        value = crossing_attempts(await self.read(), fault.edge)
        if on:
            self._since[index] = value
            self.totals.setdefault(index, 0.0)
        elif index in self._since:
            self.totals[index] += value - self._since.pop(index)

    def close(self, final: Snapshot) -> None:
        """Faults still on (removed by reset_all, not by their schedule) end now."""
        for index, since in self._since.items():
            fault = self.faults[index]
            assert isinstance(fault, ToxicFault | ProxyDownFault)
            self.totals[index] += crossing_attempts(final, fault.edge) - since
        self._since.clear()


def fault_exposure(exp: Experiment, variant: Variant, phase: PhaseResult) -> dict[str, float]:
    met = exposure(exp, variant, phase.counters, phase.attempts_while_on or None)
    return {} if met is None else {"fault_exposure": met}


@dataclass
class CpuTally:
    """CPU over a whole run: the load generator's and the mesh's, and the requests sent."""

    generator_s: float = 0.0
    mesh_s: float = 0.0
    requests: int = 0
    mesh_known: bool = True

    def add(self, generator_s: float | None, mesh_s: float | None, requests: int) -> None:
        self.generator_s += generator_s or 0.0
        if mesh_s is None:
            self.mesh_known = False
        else:
            self.mesh_s += mesh_s
        self.requests += requests

    @property
    def share(self) -> float | None:
        """The generator's CPU as a fraction of the mesh's; None against a foreign mesh."""
        if not self.mesh_known or self.mesh_s <= 0:
            return None
        return self.generator_s / self.mesh_s

    def line(self, generator: str | None = None) -> str:
        """The run's summary; `generator` names the one that ran ("go", "python")."""
        if not self.requests:  # scenarios only: they drive the mesh themselves
            return "load generator: sent no request (the experiments run drive the mesh themselves)"
        per = self.generator_s * 1000 / self.requests
        share = self.share
        shown = "n/a (a mesh this process did not start)" if share is None else f"{share:.1%}"
        which = f" ({generator})" if generator else ""
        return (
            f"load generator{which}: {per:.2f} ms CPU per request, {shown} of the mesh's CPU "
            f"over {self.requests} requests"
        )


def load_metrics(result: LoadResult) -> dict[str, float]:
    """The load's figures. A request is one of three: `full` (OK, every part answered by its
    own service), `degraded` (OK, a part from a fallback) or an error; `ok` is the first two,
    and goodput counts full answers only, as the seed's `ok` did (it had no fallbacks)."""
    outcomes = result.outcomes
    n = len(outcomes)
    ok = [o for o in outcomes if o.code == "OK"]
    full = sum(1 for o in ok if not o.degraded)
    lat = [o.latency_s * 1000 for o in outcomes]
    ok_lat = [o.latency_s * 1000 for o in ok]
    metrics = {
        "requests": float(n),
        "ok": float(len(ok)),
        "full": float(full),
        "full_rate": full / n if n else 0.0,
        "errors": float(n - len(ok)),
        "ok_rate": len(ok) / n if n else 0.0,
        "error_rate": (n - len(ok)) / n if n else 0.0,
        "degraded": float(sum(1 for o in ok if o.degraded)),
        "degraded_rate": sum(1 for o in ok if o.degraded) / n if n else 0.0,
        "personalised": float(sum(1 for o in ok if o.rpc == "home" and not o.degraded)),
        "total_ms": result.elapsed_s * 1000,
        "p50_ms": percentile(lat, 50),
        "p95_ms": percentile(lat, 95),
        "p99_ms": percentile(lat, 99),
        "max_ms": max(lat, default=0.0),
        "ok_p99_ms": percentile(ok_lat, 99),
        "min_ms": min(lat, default=0.0),
        "goodput_per_s": full / result.elapsed_s if result.elapsed_s else 0.0,
        "rejections_without_pushback": float(
            sum(1 for o in outcomes if o.code == "RESOURCE_EXHAUSTED" and o.pushback_ms is None)
        ),
    }
    for served_by in ("popular", "cached-popular", "omitted"):
        metrics[f"served_{served_by.replace('-', '_')}"] = float(
            sum(1 for o in ok if f"recommendations:{served_by}" in o.degraded)
        )
    for rpc in ("home", "checkout"):
        mine = [o for o in outcomes if o.rpc == rpc]
        if mine:
            good = [o for o in mine if o.code == "OK"]
            metrics[f"{rpc}_ok_rate"] = len(good) / len(mine)
            latencies = [o.latency_s * 1000 for o in mine]
            metrics[f"{rpc}_p95_ms"] = percentile(latencies, 95)
            metrics[f"{rpc}_p99_ms"] = percentile(latencies, 99)
    for code, count in result.codes().items():
        metrics[f"code.{code}"] = float(count)
    metrics.update(fate_metrics(result))
    return metrics


def fault_metrics(
    load: LoadResult,
    counters: Snapshot,
    exp: Experiment,
    capacity: dict[str, float],
    settle_s: float,
) -> dict[str, float]:
    """The fault phase's metrics: the load's and the services' counters', the capacity and the
    phase against it, how long the mesh took to settle, CPU."""
    metrics = {
        **load_metrics(load),
        **counter_metrics(counters, exp),
        **capacity,
        "settle_s": settle_s,
    }
    metrics.update(load.cpu_metrics())
    busy = load.busy(exp.dependency)
    if busy is not None:
        metrics["dependency_cpu_busy"] = busy
    if load.offered_per_s is not None:
        metrics["offered_per_s"] = load.offered_per_s
    if capacity:
        metrics["goodput_vs_capacity"] = metrics["goodput_per_s"] / max(
            capacity["capacity_per_s"], 1e-9
        )
        metrics["ok_p99_vs_capacity"] = metrics["ok_p99_ms"] / max(
            capacity["capacity_p99_ms"], 1e-9
        )
    return metrics


def counter_metrics(snap: Snapshot, exp: Experiment) -> dict[str, float]:
    method = "*" if exp.dependency_method == "*" else exp.dependency_method
    full = method if method in ("*",) or method.startswith("/") else None
    calls = 0.0
    for (svc, name, labels), value in snap.values.items():
        if topology.replica_of(svc) != exp.dependency or name != "mesh_server_calls_total":
            continue
        m = dict(labels).get("method", "")
        if full == "*" or (full and m == full) or (not full and m.endswith("/" + method)):
            calls += value
    per_method: dict[str, float] = {}
    for (svc, name, labels), value in snap.values.items():
        if topology.replica_of(svc) == exp.dependency and name == "mesh_server_calls_total":
            short = dict(labels).get("method", "").rsplit("/", 1)[-1]
            per_method[f"calls.{short}"] = per_method.get(f"calls.{short}", 0.0) + value
    return {
        **per_method,
        "dependency_calls": calls,
        "dependency_calls_all": snap.total("mesh_server_calls_total", exp.dependency),
        "retries": snap.total("mesh_client_retries_total"),
        "breaker_rejections": snap.total("mesh_breaker_rejections_total"),
        "breaker_opened": snap.total("mesh_breaker_transitions_total", to_state="open"),
        "bulkhead_rejections": snap.total("mesh_bulkhead_rejections_total"),
        "dependency_bulkhead_rejections": _refused_by_bulkhead(snap, exp),
        "fallbacks": snap.total("mesh_fallbacks_total"),
        "shed": snap.total("mesh_server_shed_total"),
        "pushbacks_honoured": snap.total("mesh_pushbacks_honoured_total"),
        "faults_injected": snap.total("mesh_faults_injected_total"),
    }


def _refused_by_bulkhead(snap: Snapshot, exp: Experiment) -> float:
    """Calls to the experiment's dependency method a bulkhead refused: at most one per request
    (the bulkhead is outside the retries), where `bulkhead_rejections` also counts the other
    edges and methods, such as the fallback's Popular refused by the same full bulkhead."""
    method = exp.dependency_method
    refused = 0.0
    for (_, name, labels), value in snap.values.items():
        found = dict(labels)
        if name != "mesh_bulkhead_rejections_total" or found.get("dependency") != exp.dependency:
            continue
        m = found.get("method", "")
        if method == "*" or m == method or m.endswith("/" + method):
            refused += value
    return refused


def check_probes(metrics: dict[str, float], probes: list[Probe]) -> list[str]:
    failures = []
    for p in probes:
        value = metrics[p.metric]
        if p.max is not None and value > p.max:
            failures.append(f"{p.metric} {value:.3f} > {p.max}")
        if p.min is not None and value < p.min:
            failures.append(f"{p.metric} {value:.3f} < {p.min}")
    return failures


def evaluate(result: ExperimentResult) -> list[Verdict]:
    """Each expectation against what was measured; a sweep's figures, which need every load point,
    are added first (grpc_resilience_mesh/chaos/run/sweep_metrics.py). An xds variant skipped (no
    mesh-xds built, or a mesh the runner cannot restart) has its expectations left out."""
    add_sweep_metrics(result)
    by_name = {v.variant.name: v for v in result.variants}
    verdicts = []
    for exp in result.experiment.expectations:
        bound = " and ".join(
            s
            for s in (
                f">= {exp.min:g}" if exp.min is not None else "",
                f"<= {exp.max:g}" if exp.max is not None else "",
            )
            if s
        )
        variant = by_name.get(exp.variant)
        if variant is not None and variant.skipped and variant.variant.xds:
            continue  # no mesh-xds here (or not our mesh): said in the report, not a miss
        phase = variant.phases.get(exp.phase) if variant else None
        value = phase.metrics.get(exp.metric) if phase else None
        if value is None and phase is not None and counted(exp.metric):
            value = 0.0  # a status never returned, a method never called: none, not n/a
        fault = variant.phases.get("fault") if variant else None
        void = fault is not None and fault.metrics.get("fault_exposure", 1.0) == 0
        passed = (
            not void
            and value is not None
            and (exp.min is None or value >= exp.min)
            and (exp.max is None or value <= exp.max)
        )
        note = phase.notes.get(exp.metric, "") if phase is not None and value is None else ""
        verdicts.append(
            Verdict(exp.variant, exp.phase, exp.metric, value, bound, passed, exp.why, void, note)
        )
    return verdicts + fate_verdicts(result)
