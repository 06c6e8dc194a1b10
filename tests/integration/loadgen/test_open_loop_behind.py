"""An open loop behind its schedule (more arrivals due than it can start) still yields to the
loop on every arrival: a stop set by another task, as the guard sets it, ends the load within
50 ms instead of once the loop has caught up."""

from __future__ import annotations

import asyncio
import time
from collections import Counter as Tally

from grpc_resilience_mesh.loadgen.any_method import (
    CallRecord,
    LoadShape,
    render_requests,
    resolve_method,
    run_load,
)
from tests.integration.loadgen.any_method_servers import Counter, counter_serving

ECHO = "/loadtest.v1.Counter/Echo"
REQUESTS = 200_000
STOP_AFTER_S = 0.05


async def test_a_stop_ends_an_open_loop_that_is_behind_schedule_within_50_ms() -> None:
    counter = Counter(hold=True)  # three calls held: every later arrival finds no free slot
    async with counter_serving(counter) as target:
        info = await resolve_method(target, ECHO)
        calls = render_requests(info, {}, {}, 1)
        seen: list[CallRecord] = []
        stop = asyncio.Event()
        shape = LoadShape(REQUESTS, 3, 10.0, 60.0, rate_per_s=1_000_000.0)

        async def guard() -> None:
            await asyncio.sleep(STOP_AFTER_S)
            stop.set()

        started = time.monotonic()
        watcher = asyncio.create_task(guard())
        records = await run_load(target, info, calls, shape, seen.append, stop)
        ended_s = time.monotonic() - started
        await watcher
    tally = Tally(r.code for r in records)
    print(f"\nbehind schedule: {tally}; load ended {ended_s * 1000:.1f} ms after it began")
    assert tally["CLIENT_DROPPED"] > 0, "the loop was not behind its schedule"
    assert len(records) < REQUESTS, "the loop ran to its end before the stop was seen"
    assert ended_s - STOP_AFTER_S < 0.05, ended_s
