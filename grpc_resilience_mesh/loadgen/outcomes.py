"""What a load gives back: each request as the user saw it (`Outcome`), and a whole load's
outcomes, wall time and CPU (`LoadResult`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from grpc_aio_resilience import seen_by_caller
from grpc_resilience_mesh.loadgen.percentile import percentile
from grpc_resilience_mesh.loadgen.protocol import Plan


@dataclass(frozen=True)
class Outcome:
    """One request as the user saw it."""

    rpc: str
    code: str
    latency_s: float
    degraded: tuple[str, ...] = ()
    status: str = ""
    charge_id: str = ""
    key: str = ""
    started_s: float = 0.0
    pushback_ms: int | None = None
    """The grpc-retry-pushback-ms trailer of a failed call, if it had one."""
    trace_id: str = ""
    """The W3C trace id this request was sent with: `mesh traces TRACE_ID` shows its story."""
    detail: str = ""
    """The status details of a failed call (truncated)."""
    fate: str = ""
    """Its fate (grpc_aio_resilience's fates): the answer's `resilience-fate`, else what the
    caller saw."""


@dataclass
class LoadResult:
    """Every outcome of one load run, and its wall time."""

    outcomes: list[Outcome] = field(default_factory=list)
    elapsed_s: float = 0.0
    generator_cpu_s: float | None = None
    """The load generator process's own CPU (utime+stime) over the load; None if unknown."""
    mesh_cpu_s: float | None = None
    """The mesh's CPU (its services' and Toxiproxy's utime+stime) over the same load; None
    for a mesh this process did not start."""
    offered_per_s: float | None = None
    """The open-loop rate the load was offered at (None: closed loop)."""
    process_cpu_s: dict[str, float] = field(default_factory=dict)
    """Each mesh process's CPU over the load, by name (empty when mesh_cpu_s is None)."""

    def add_cpu(self, generator_s: float | None, by_process: dict[str, float] | None) -> None:
        """Count one more part (a wave) of this load's CPU; unknown stays unknown."""
        if generator_s is not None:
            self.generator_cpu_s = (self.generator_cpu_s or 0.0) + generator_s
        if by_process is None:
            self.mesh_cpu_s = None
            self.process_cpu_s = {}
            return
        self.mesh_cpu_s = (self.mesh_cpu_s or 0.0) + sum(by_process.values())
        for name, used in by_process.items():
            self.process_cpu_s[name] = self.process_cpu_s.get(name, 0.0) + used

    def busy(self, process: str) -> float | None:
        """`process`'s CPU seconds per second of this load: a single-threaded event loop
        near 1.0 is saturated, and calls queue in front of it."""
        used = self.process_cpu_s.get(process)
        return None if used is None or self.elapsed_s <= 0 else used / self.elapsed_s

    def cpu_metrics(self) -> dict[str, float]:
        """CPU per request of the generator and of the mesh, and the generator's share."""
        n = len(self.outcomes)
        out: dict[str, float] = {}
        if self.generator_cpu_s is not None and n:
            out["generator_cpu_ms_per_req"] = self.generator_cpu_s * 1000 / n
        if self.mesh_cpu_s is not None and n:
            out["mesh_cpu_ms_per_req"] = self.mesh_cpu_s * 1000 / n
        if self.generator_cpu_s is not None and self.mesh_cpu_s:
            out["generator_cpu_share"] = self.generator_cpu_s / self.mesh_cpu_s
        return out

    def codes(self) -> Counter[str]:
        return Counter(o.code for o in self.outcomes)

    def fates(self) -> Counter[str]:
        """Requests by fate: they add up to the requests, one fate each."""
        return Counter(o.fate for o in self.outcomes)

    def latency_ms(self, q: float) -> float:
        return percentile([o.latency_s * 1000 for o in self.outcomes], q)


def outcome_of(plan: Plan, record: Sequence[object]) -> Outcome:
    """A generator record (grpc_resilience_mesh/loadgen/protocol.py RECORD_FIELDS) as the user saw
    it."""
    index, started, latency, code, degraded, status, charge_id, pushback, detail = record[:9]
    carried = str(record[9]) if len(record) > 9 else ""  # a generator built before fates: none
    request = plan.requests[int(index)]  # type: ignore[call-overload]
    return Outcome(
        request.rpc,
        str(code),
        float(latency),  # type: ignore[arg-type]
        tuple(str(degraded).split(",")) if degraded else (),
        str(status),
        str(charge_id),
        request.key,
        float(started),  # type: ignore[arg-type]
        None if pushback is None else int(pushback),  # type: ignore[call-overload]
        request.trace_id,
        str(detail),
        carried or seen_by_caller(str(code), None, str(degraded)),
    )
