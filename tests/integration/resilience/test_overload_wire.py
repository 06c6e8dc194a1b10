"""The declared-capacity recommendation over the wire: the pool, not the CPU, sets what it
serves; under 5x its capacity an adaptive limit keeps the queue in front of the workers short
while a static limit set too high lets it (and every accepted call's latency) grow."""

from __future__ import annotations

from collections import Counter

import grpc

from grpc_aio_resilience import from_dict
from grpc_resilience_mesh.services.policy.pool import MeshServerPolicy
from tests.integration.resilience.overload import (
    POOL,
    capacity_server,
    measure,
    open_loop,
    variant,
)


async def test_the_pool_serves_at_most_its_declared_capacity_with_the_cpu_mostly_idle() -> None:
    # N=4, 20 ms fixed: 200 calls/s at most, whatever the CPU. Offered 400/s for 1 s, the
    # calls that end within that second are at most 4 x 50 = 200 (204 with rounding at the
    # edges), and the pool runs 4 at once, never more. How close to 200/s it comes is a
    # speed, and the machine's as much as the pool's (a starved CI run sent its calls late
    # and saw 124 end in that second): `python -m tests.integration.resilience.overload`
    # measures it. CPU: the client and the server share this process; under half a core
    # (measured: ~0.25) shows that the capacity is the pool's, not the CPU's.
    policy = from_dict(MeshServerPolicy, {"max_in_flight": 0, "pool": POOL})
    async with capacity_server(policy) as served:
        outcomes, wall_s, cpu_s = await open_loop(served.target, 400, 1.0, deadline_s=5.0)
    within = [o for o in outcomes if o.code is grpc.StatusCode.OK and o.sent_s + o.latency_s <= 1]
    assert len(within) <= 204, f"{len(within)} calls completed in the first second"
    assert all(o.code is grpc.StatusCode.OK for o in outcomes), "nothing refused or timed out"
    busy = Counter(done.in_use for done in served.pool_done)
    assert max(busy) == 4, f"workers in use as calls ended: {busy}"
    assert busy[4] >= len(outcomes) // 2, f"a queue formed: mostly all 4 busy ({busy})"
    print(
        f"\ncompleted in 1 s: {len(within)}; CPU {cpu_s / len(outcomes) * 1e3:.2f} ms/call, "
        f"{cpu_s / wall_s:.2f} of a core"
    )
    assert cpu_s / wall_s < 0.5
    waits = served.metrics.registry.get_sample_value(
        "mesh_pool_wait_seconds_count", {"service": "recommendation"}
    )
    assert waits == len(outcomes) + 1, "every call's pool wait is observed (+1: the warm-up)"


async def test_at_5x_an_adaptive_limit_keeps_the_queue_short_where_static_64_lets_it_grow() -> None:
    # N=20 workers x 200 ms (100/s; 5x = 500 calls/s keeps this process near half a core, so
    # the figures are the pattern's). Static 64 (today's default) admits 64 at once, 44 more
    # than the workers: by Little's law each waits 44 / 20 x 200 ms = 440 ms for a worker.
    # Gradient2 with the reference's defaults (min_limit 20: this pool) inside its
    # WindowedLimit (one sample per 1 s window) starts at 20 places, the workers, and can grow
    # by at most smoothing x queue_size = 0.8 places a window: about 23 after 4 s, a wait of
    # at most 3 / 20 x 200 ms = 30 ms. Bounds: static's median wait at least 300 ms, the
    # adaptive one's at most half of it; both refuse; the adaptive limit keeps the workers
    # as busy as static does (its limit never falls below them).
    #
    # The waits are the pool's own (it keeps its schedule whatever the event loop does); the
    # deadline is long enough (5 s) that a starved machine's late answers are not counted as
    # lost: CI once saw static's every call end DEADLINE_EXCEEDED at 1 s (840 ms of queue and
    # service plus the machine's delay), and no p50 to compare.
    #
    # An earlier version ran Gradient2 per call (min_limit 1) on 2 workers x 20 ms: its long
    # average (600 samples, 6 s at 100/s) followed the queued RTT within the 4 s, so its limit
    # drifted up, and under CI's two test workers it missed (p50 355 ms against static's 641).
    #
    # Goodput is the calls that ended within the load, as the overload sweep counts it. It once
    # counted every OK call sent after the warm-up: static's 64 places then added the ~40
    # calls still queued when the load stopped (340 OK in 3 s, 1.13x the pool's capacity),
    # and on a loaded CI machine the adaptive limit, which has no slack above the workers,
    # left some idle while the event loop was late to free a place (271, 0.90x): 0.80x of a
    # figure the pool cannot serve, a miss of the measure, not of the mechanism.
    runs = {}
    for name in ("static-64", "gradient2-windowed"):
        runs[name] = await measure(variant(name, 20, 0.2), load=5.0, duration_s=4.0, deadline_s=5)
    static, adaptive = runs["static-64"], runs["gradient2-windowed"]
    print(f"\nstatic-64: {static}\ngradient2-windowed: {adaptive}")
    assert static.pool_wait_p50_s >= 0.300, "static 64 lets the queue grow"
    assert adaptive.pool_wait_p50_s <= 0.5 * static.pool_wait_p50_s
    assert adaptive.refused > 0 and static.refused > 0
    assert adaptive.goodput_per_s >= 0.8 * static.goodput_per_s
