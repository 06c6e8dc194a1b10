"""The `recovery` check: goodput before, during and after a trigger, and how long the mesh took
to come back once the trigger was gone (a metastable failure's measure).

The trigger is the phase's first fault (its on/off times in the timeline). Capacity is the
one the backend declares: every recommendation replica's `pool.workers / pool.service_time_s`,
read from the policy the replica runs (PolicyAdmin GetPolicy), so the figure is the pattern's,
not the machine's. Beside the times, the counters that say which mechanism kept the mesh down
or broke the loop: attempts per call, work done for callers who had gone, retries, the breaker,
the throttle, the pool's refusals.
"""

from __future__ import annotations

import grpc

from grpc_resilience_mesh.chaos.registry import CheckContext
from grpc_resilience_mesh.chaos.scenarios.goodput import (
    WARMUP_S,
    Completions,
    back_after,
    low_for,
    trigger_window,
)
from grpc_resilience_mesh.services.policy.loading import load_policy_text
from grpc_resilience_mesh.services.runtime.admin_auth import admin_metadata
from grpc_resilience_mesh.services.topology import replica_of
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc

BACK_FRACTION = 0.95
"""Back: goodput at >= 95% of its pre-trigger level (the issue's target)."""
LOW_FRACTION = 0.5
"""Down: goodput below half the declared capacity."""


async def declared_capacity(ctx: CheckContext, service: str = "recommendation") -> float:
    """Calls per second the service's replicas declare (0: no pool)."""
    total = 0.0
    for name, addr in sorted(ctx.target.admin.items()):
        if replica_of(name) != service:
            continue
        async with grpc.aio.insecure_channel(addr) as channel:
            info = await admin_pb2_grpc.PolicyAdminStub(channel).GetPolicy(
                admin_pb2.GetPolicyRequest(),
                timeout=5,
                metadata=admin_metadata(ctx.target.admin_token),
            )
        pool = load_policy_text(info.yaml, f"{name}'s policy", {}).server(service).pool
        total += pool.workers / pool.service_time_s if pool.workers else 0.0
    return total


def recovery_metrics(
    done: Completions, window: tuple[float, float], capacity: float
) -> dict[str, float]:
    """The goodput levels around the trigger `window` and the times to come back / stay low."""
    on_s, off_s = window
    level = done.rate(done.first_start_s + min(WARMUP_S, on_s / 2), on_s)
    after = done.rate(off_s, done.last_start_s)
    back = back_after(done, off_s, level, BACK_FRACTION)
    remaining = max(0.0, done.last_start_s - off_s)
    return {
        "declared_capacity_per_s": capacity,
        "pre_trigger_goodput_per_s": level,
        "trigger_goodput_per_s": done.rate(on_s, off_s),
        "after_goodput_per_s": after,
        "after_goodput_vs_capacity": after / capacity if capacity else 0.0,
        "after_trigger_s": remaining,
        "back_after_trigger_s": remaining if back is None else back,
        "back": 0.0 if back is None else 1.0,
        "low_after_trigger_s": low_for(done, off_s, LOW_FRACTION * capacity),
    }


async def recovery(ctx: CheckContext) -> dict[str, float]:
    """See the module docstring; nothing when the phase's fault never went on and off."""
    window = trigger_window(ctx.phase.timeline)
    if window is None:
        return {}
    capacity = await declared_capacity(ctx)
    done = Completions.of(ctx.phase.load.outcomes, ctx.phase.timeline_t0_s)
    metrics = recovery_metrics(done, window, capacity)
    counters = ctx.phase.counters
    calls = len(ctx.phase.load.outcomes)
    attempts = counters.total("mesh_client_attempts_total", "gateway", dependency="recommendation")
    metrics["attempts_per_call"] = attempts / calls if calls else 0.0
    metrics["abandoned_work"] = counters.total("mesh_pool_abandoned_total", "recommendation")
    metrics["pool_refused"] = counters.total(
        "mesh_server_calls_total", "recommendation", code="RESOURCE_EXHAUSTED"
    )
    metrics["throttled"] = counters.total("mesh_client_throttled_total", "gateway")
    return metrics
