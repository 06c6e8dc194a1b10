"""An open loop behind its schedule (more arrivals due than it can start) still yields to the
loop on every arrival: a stop set by another task, as the guard sets it, ends the load within a
few arrivals instead of once the loop has caught up.

Counted in arrivals, not milliseconds: on a loaded CI machine a turn of the event loop can take
100 ms, but the number of arrivals the loop records between the stop and its end is a property
of the code (one yield per arrival), whatever the machine's speed."""

from __future__ import annotations

import asyncio
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
IN_FLIGHT = 3
# After `stop.set()` the event loop runs: the waiter of `stop.wait()`, the task of `run_load`
# woken by asyncio.wait, then its cancel of the loop. The open loop takes at most one turn in
# each, so at most a handful of drops land after the stop, beside the held calls cancelled.
ARRIVALS_AFTER_STOP = 8


async def test_a_stop_ends_an_open_loop_that_is_behind_schedule_within_a_few_arrivals() -> None:
    counter = Counter(hold=True)  # three calls held: every later arrival finds no free slot
    async with counter_serving(counter) as target:
        info = await resolve_method(target, ECHO)
        calls = render_requests(info, {}, {}, 1)
        seen: list[CallRecord] = []
        stop = asyncio.Event()
        shape = LoadShape(REQUESTS, IN_FLIGHT, 10.0, 60.0, rate_per_s=1_000_000.0)
        at_stop: list[int] = []

        def record(r: CallRecord) -> None:
            # Stop once the loop is plainly behind (200 arrivals dropped, none able to start),
            # as the guard does: the stop is only seen once the open loop yields.
            seen.append(r)
            if len(seen) == 200 and all(x.code == "CLIENT_DROPPED" for x in seen):
                at_stop.append(len(seen))
                stop.set()

        records = await run_load(target, info, calls, shape, record, stop)
    tally = Tally(r.code for r in records)
    after = len(records) - at_stop[0]
    print(f"\nbehind schedule: {tally}; {after} records after the stop ({at_stop[0]} before)")
    assert tally["CLIENT_DROPPED"] >= 200, "the loop was not behind its schedule"
    assert len(records) < REQUESTS, "the loop ran to its end before the stop was seen"
    assert tally["CANCELLED"] == IN_FLIGHT, tally  # the held calls, cancelled by the stop
    assert after <= IN_FLIGHT + ARRIVALS_AFTER_STOP, (after, at_stop[0], tally)
