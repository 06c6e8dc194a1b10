"""The two ends of a topology run once everything is up and every request rendered: the dry
run (the steady-state load judged by the guard, nothing injected) and the live one (steady
state, then the faults under a lease, the load under the guard and the lever, the rollback)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from grpc_resilience_mesh.chaos.topology.experiment_model import SteadyStateSpec
from grpc_resilience_mesh.chaos.topology.injection import Injection
from grpc_resilience_mesh.chaos.topology.lease import FaultLease
from grpc_resilience_mesh.chaos.topology.model import LoadedExperiment
from grpc_resilience_mesh.chaos.topology.phases import Prepared, Watched, shape, watched_load
from grpc_resilience_mesh.chaos.topology.proxies import ProxySet
from grpc_resilience_mesh.chaos.topology.report import figures, judge
from grpc_resilience_mesh.chaos.topology.traces import jaeger_ui, notable_traces
from grpc_resilience_mesh.chaos.topology.wiring import Wiring

HELD, NOT_HELD, ABORTED_BY_GUARD, STOPPED_BY_LEVER = 0, 1, 3, 4


def steady_problem(spec: SteadyStateSpec, figs: dict[str, float]) -> str | None:
    """Why the system was not healthy before any fault, or None."""
    if figs["error_rate"] > spec.max_error_rate:
        return f"error_rate {figs['error_rate']:.3g} > {spec.max_error_rate:g}"
    if spec.max_p99_s is not None and figs["p99_s"] > spec.max_p99_s:
        return f"p99_s {figs['p99_s']:.3g} > {spec.max_p99_s:g}"
    return None


async def dry(
    loaded: LoadedExperiment,
    wiring: Wiring,
    proxies: ProxySet,
    prepared: Prepared,
    view: Callable[[str], None],
) -> dict[str, Any]:
    """Targets, proxies and the method are checked by now; here the guard's baseline."""
    exp = loaded.experiment
    steady_shape = shape(exp.load, exp.steady_state.requests)
    watched = await watched_load(
        prepared, prepared.steady_calls, steady_shape, exp.guard, lever=False, final_check=True
    )
    figs = figures(watched.records)
    problems = [p for p in (steady_problem(exp.steady_state, figs),) if p]
    if watched.breach is not None:
        problems.append(f"the guard trips on the baseline: {watched.breach}")
    verdict = "dry run: ready" if not problems else f"dry run: not ready: {'; '.join(problems)}"
    view(verdict)
    return {
        "dry_run": True,
        "verdict": verdict,
        "exit_code": HELD if not problems else NOT_HELD,
        "steady_state": figs,
        "toxics": await asyncio.to_thread(proxies.toxics_listed),
    }


async def live(
    loaded: LoadedExperiment,
    wiring: Wiring,
    proxies: ProxySet,
    prepared: Prepared,
    view: Callable[[str], None],
) -> dict[str, Any]:
    """Steady state; if it holds, the faults, the load, the rollback and the verdict."""
    exp = loaded.experiment
    steady = await watched_load(
        prepared,
        prepared.steady_calls,
        shape(exp.load, exp.steady_state.requests),
        exp.guard,
        final_check=True,
    )
    steady_figs = figures(steady.records)
    result: dict[str, Any] = {
        "dry_run": False,
        "steady_state": steady_figs,
        "faults": [f.label for f in exp.faults],
    }
    why = steady_problem(exp.steady_state, steady_figs)
    if steady.breach is not None or steady.lever is not None:
        stopped = _stopped(steady, None, None, phase="steady state")
        view(f"{stopped['verdict']}; no fault injected")
        return {**result, **stopped}
    if why is not None:
        view(f"steady state not met: {why}; no fault injected")
        return {**result, "verdict": f"not held: steady state: {why}", "exit_code": NOT_HELD}
    rate, p99 = steady_figs["error_rate"], steady_figs["p99_s"]
    view(f"steady state: error_rate {rate:.3g}, p99 {p99:.3g} s")
    watched, injection = await _under_faults(loaded, wiring, proxies, prepared, view)
    figs = figures(watched.records)
    result.update(
        load=figs,
        traces=notable_traces(watched.records, prepared.run_id, jaeger_ui(loaded.topology)),
        toxics_after_rollback=await asyncio.to_thread(proxies.toxics_listed),
        rollback_failures=injection.failures,
    )
    if watched.breach is not None or watched.lever is not None:
        result.update(_stopped(watched, injection.rolled_back_at, watched.stopped_at))
    else:
        judged = judge(exp.expectations, figs)
        held = all(j.held for j in judged)
        result.update(
            verdict="held" if held else "not held",
            exit_code=HELD if held else NOT_HELD,
            expectations=[j.to_json() for j in judged],
        )
    view(f"verdict: {result['verdict']}")
    return result


async def _under_faults(
    loaded: LoadedExperiment,
    wiring: Wiring,
    proxies: ProxySet,
    prepared: Prepared,
    view: Callable[[str], None],
) -> tuple[Watched, Injection]:
    exp = loaded.experiment
    injection = Injection(list(exp.faults), proxies, wiring.admin)
    loop = asyncio.get_running_loop()
    pending: list[asyncio.Task[float]] = []

    def on_stop() -> None:  # the rollback starts now, while the load unwinds
        pending.append(loop.create_task(injection.rollback()))

    names = [e.name for e in loaded.topology.edges]
    lease = FaultLease(proxies.url, names, token=proxies.token, embedded=proxies.embedded)
    await asyncio.to_thread(lease.__enter__)  # HTTP, or a watchdog's start: not on the loop
    try:
        await injection.apply()
        view(f"faults in: {', '.join(f.label for f in exp.faults) or 'none'}")
        load_shape = shape(exp.load, exp.load.requests)
        watched = await watched_load(prepared, prepared.calls, load_shape, exp.guard, on_stop)
    finally:
        await injection.rollback()
        await asyncio.gather(*pending, return_exceptions=True)
        await asyncio.to_thread(lease.release)
    view("faults removed")
    return watched, injection


def _stopped(
    watched: Watched, removed_at: float | None, stopped_at: float | None, phase: str = ""
) -> dict[str, Any]:
    """The verdict of a load the guard or the lever stopped, and how fast the faults went;
    `phase` names a load other than the one under faults ("steady state")."""
    rollback_s = None if removed_at is None or stopped_at is None else removed_at - stopped_at
    if watched.breach is not None:
        b = watched.breach
        return {
            "verdict": f"aborted by guard{f' ({phase})' if phase else ''}: {b}",
            "exit_code": ABORTED_BY_GUARD,
            "breach": {"metric": b.metric, "value": b.value, "bound": b.bound},
            "rollback_s": rollback_s,
        }
    return {
        "verdict": f"stopped by lever: {watched.lever}",
        "exit_code": STOPPED_BY_LEVER,
        "rollback_s": rollback_s,
    }
