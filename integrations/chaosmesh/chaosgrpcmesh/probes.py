"""Probes: gRPC health, the mesh's load generator (its output is the metrics), counters read
from /metrics, breaker and ejection state, and what this run has measured so far."""

from __future__ import annotations

import json
from typing import Any

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from chaosgrpcmesh.mesh import MEASURED, STARTED, experiment, run, state_file, target
from grpc_resilience_mesh.chaos.experiment.model import LoadSpec
from grpc_resilience_mesh.chaos.run.measure import counter_metrics, load_metrics, vs_steady
from grpc_resilience_mesh.client.counters import scrape
from grpc_resilience_mesh.loadgen.in_process import LoadGenerator, LoadResult
from grpc_resilience_mesh.loadgen.plans import plan_for

Configuration = dict[str, Any] | None


def grpc_health(
    services: list[str] | None = None, configuration: Configuration = None
) -> dict[str, str]:
    """Each service's grpc.health.v1 status by name (SERVING, NOT_SERVING, or the call's
    error code, e.g. UNAVAILABLE): every service of the mesh unless `services` names some."""
    listed = json.loads(state_file(configuration).read_text())["services"]
    names = services or sorted(listed)
    return run(_health({n: listed[n]["listen"] for n in names}))


async def _health(addrs: dict[str, str]) -> dict[str, str]:
    out = {}
    for name, addr in addrs.items():
        async with grpc.aio.insecure_channel(addr) as channel:
            try:
                reply = await health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(), timeout=2
                )
                out[name] = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            except grpc.aio.AioRpcError as err:
                out[name] = err.code().name
    return out


def run_load(
    phase: str = "steady",
    rpc: list[str] | None = None,
    requests: int = 50,
    concurrency: int = 10,
    deadline_s: float = 5.0,
    think_s: float = 0.0,
    rate_per_s: float | None = None,
    max_duration_s: float = 60.0,
    client_retries: int = 0,
    configuration: Configuration = None,
) -> dict[str, float]:
    """The mesh's load generator, closed loop: `requests` calls of `rpc` (default home) at
    `concurrency`; its output is the metrics `mesh chaos run` reports (error_rate, ok, p50_ms,
    total_ms, ...), with the experiment's dependency calls when `mesh_experiment` is set and,
    for the fault phase, the latencies against the steady state before (p50_vs_steady)."""
    spec = LoadSpec(
        rpc=rpc or ["home"],  # type: ignore[arg-type]
        requests=requests,
        concurrency=concurrency,
        deadline_s=deadline_s,
        think_s=think_s,
        rate_per_s=rate_per_s,
        max_duration_s=max_duration_s,
        client_retries=client_retries,
    )
    if phase != "steady":
        STARTED.add("method")
    metrics = run(_measured_load(spec, configuration))
    if phase == "steady":
        phase = "steady_after" if STARTED else "steady_before"
    if phase == "fault" and "steady_before" in MEASURED:
        metrics.update(vs_steady(metrics, MEASURED["steady_before"]))
    MEASURED[phase] = {**MEASURED.get(phase, {}), **metrics}
    return metrics


async def _measured_load(spec: LoadSpec, configuration: Configuration) -> dict[str, float]:
    tgt = target(configuration)
    exp = experiment(configuration)
    before = await scrape(tgt.metrics)
    result = await _send(tgt.gateway, tgt.api_key, spec)
    metrics = load_metrics(result)
    if exp is not None:
        metrics.update(counter_metrics(await scrape(tgt.metrics) - before, exp))
    return metrics


async def _send(gateway: str, api_key: str | None, spec: LoadSpec) -> LoadResult:
    generator = LoadGenerator()
    try:
        plan = plan_for(
            gateway,
            spec.requests,
            spec.rpc,
            concurrency=spec.concurrency,
            timeout_s=spec.deadline_s,
            think_s=spec.think_s,
            rate_per_s=spec.rate_per_s,
            max_duration_s=spec.max_duration_s,
            client_retries=spec.client_retries,
            api_key=api_key,
        )
        return await generator.run(plan)
    finally:
        await generator.close()


def counters(
    name: str,
    service: str | None = None,
    labels: dict[str, str] | None = None,
    configuration: Configuration = None,
) -> float:
    """The sum of the samples of `name` on /metrics (every service, or `service`'s replicas),
    matching `labels`: e.g. mesh_server_calls_total on recommendation."""
    snap = run(scrape(target(configuration).metrics))
    return snap.total(name, service, **(labels or {}))


def breaker_state(
    service: str = "gateway", phase: str | None = None, configuration: Configuration = None
) -> dict[str, Any]:
    """`service`'s breakers by method (0 closed, 1 open, 2 half-open) and how many are not
    closed; with `phase`, recorded as that phase's breakers_not_closed."""
    snap = run(scrape(target(configuration).metrics))
    states = snap.gauge("mesh_breaker_state", service)
    not_closed = sum(1 for v in states.values() if v != 0)
    if phase:
        MEASURED.setdefault(phase, {})["breakers_not_closed"] = float(not_closed)
    return {"breakers": states, "not_closed": not_closed}


def ejection_state(
    service: str = "gateway", configuration: Configuration = None
) -> dict[str, float]:
    """Which replicas `service`'s outlier ejection keeps out now (mesh_replica_ejected, 1 out)."""
    snap = run(scrape(target(configuration).metrics))
    return {
        dict(labels).get("replica", "?"): value
        for (svc, sample, labels), value in snap.values.items()
        if sample == "mesh_replica_ejected" and svc.split("-")[0] == service
    }


def probe_until_closed(
    phase: str = "recovery",
    rpc: list[str] | None = None,
    deadline_s: float = 5.0,
    most: int = 20,
    configuration: Configuration = None,
) -> int:
    """Requests one at a time until no service reports a breaker not closed (at most `most`):
    how many it took, recorded as `phase`'s probes_to_close (as `mesh chaos run` measures)."""
    tgt = target(configuration)
    spec = LoadSpec(
        rpc=rpc or ["home"],  # type: ignore[arg-type]
        requests=1,
        concurrency=1,
        deadline_s=deadline_s,
    )

    async def probe() -> int:
        sent = 0
        while sent < most and (await scrape(tgt.metrics)).total_nonzero("mesh_breaker_state"):
            await _send(tgt.gateway, tgt.api_key, spec)
            sent += 1
        return sent

    sent = run(probe())
    MEASURED.setdefault(phase, {})["probes_to_close"] = float(sent)
    return sent


def measured(configuration: Configuration = None) -> dict[str, Any]:
    """What this run measured so far, by phase, and whether the method has begun (before it,
    there is nothing to hold to account: chaosgrpcmesh.tolerances.expectations_met passes)."""
    return {"started": bool(STARTED), "phases": {k: dict(v) for k, v in MEASURED.items()}}
