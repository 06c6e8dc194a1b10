"""The declared-capacity recommendation over the wire: the pool, not the CPU, sets what it
serves; under 5x its capacity an adaptive limit keeps accepted calls fast while a static limit
set too high lets the queue (and every accepted call's latency) grow."""

from __future__ import annotations

import grpc

from mesh.resilience.admission_policy import ServerPolicy
from tests.integration.resilience.overload import (
    POOL,
    capacity_server,
    measure,
    open_loop,
    variant,
)


async def test_the_pool_serves_its_declared_capacity_with_the_cpu_mostly_idle() -> None:
    # N=4, 20 ms fixed: 200 calls/s at most, whatever the CPU. Offered 400/s for 1 s, the
    # calls that end within that second are at most 4 x 50 = 200 (204 with rounding at the
    # edges); the lower bound leaves 25% for a shared machine's scheduling delays. CPU: the
    # client and the server share this process; under half a core (measured: ~0.25) shows
    # that the capacity is the pool's, not the CPU's.
    policy = ServerPolicy.model_validate({"max_in_flight": 0, "pool": POOL})
    async with capacity_server(policy) as served:
        outcomes, wall_s, cpu_s = await open_loop(served.target, 400, 1.0, deadline_s=5.0)
    within = [o for o in outcomes if o.code is grpc.StatusCode.OK and o.sent_s + o.latency_s <= 1]
    assert 150 <= len(within) <= 204, f"{len(within)} calls completed in the first second"
    assert all(o.code is grpc.StatusCode.OK for o in outcomes), "nothing refused or timed out"
    print(
        f"\ncompleted in 1 s: {len(within)}; CPU {cpu_s / len(outcomes) * 1e3:.2f} ms/call, "
        f"{cpu_s / wall_s:.2f} of a core"
    )
    assert cpu_s / wall_s < 0.5
    waits = served.metrics.registry.get_sample_value(
        "mesh_pool_wait_seconds_count", {"service": "recommendation"}
    )
    assert waits == len(outcomes) + 1, "every call's pool wait is observed (+1: the warm-up)"


async def test_at_5x_an_adaptive_limit_keeps_accepted_calls_fast_where_static_64_queues() -> None:
    # N=20 workers x 200 ms (100/s; 5x = 500 calls/s keeps this process near half a core, so
    # the figures are the pattern's). Static 64 (today's default) admits 64 at once: by
    # Little's law an accepted call waits 64 / 20 x 200 ms = 640 ms. Gradient2 with the
    # reference's defaults (min_limit 20: this pool) inside its WindowedLimit (one sample per
    # 1 s window) starts at 20 places, the workers, and can grow by at most smoothing x
    # queue_size = 0.8 places a window: about 23 after 4 s, 230 ms by Little's law. Bounds:
    # its p50 at most half of static's, its p99 below static's, its goodput at least 80% of
    # capacity (its limit never falls below the 20 workers).
    #
    # An earlier version ran Gradient2 per call (min_limit 1) on 2 workers x 20 ms: its long
    # average (600 samples, 6 s at 100/s) followed the queued RTT within the 4 s, so its limit
    # drifted up, and under CI's two test workers it missed (p50 355 ms against static's 641).
    static = await measure(variant("static-64", 20, 0.2), load=5.0, duration_s=4.0)
    adaptive = await measure(variant("gradient2-windowed", 20, 0.2), load=5.0, duration_s=4.0)
    print(f"\nstatic-64: {static}\ngradient2-windowed: {adaptive}")
    assert static.p50_s >= 0.400, "static 64 lets the queue grow"
    assert adaptive.p50_s <= 0.5 * static.p50_s
    assert adaptive.p99_s < static.p99_s
    assert adaptive.goodput_per_s >= 0.8 * 100
    assert adaptive.refused > 0 and static.refused > 0
