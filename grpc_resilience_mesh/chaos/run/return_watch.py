"""A kill fault's load goes on until the process it restarted has been back for a while.

What a restart tests is the callers' return to the process, measured from the moment it
reports SERVING (the replicas check's back_after_s). How long the start itself takes is the
machine's: profile from exec to SERVING in 1.05 s on an idle 2-core machine
(docs/results/startup.md), in 5.6 and 8.5 s inside replica-loss on the same machine at load
average 13-15. A load of a fixed 7 s then ended before the replica served, and the verdict
(`back_after_s = n/a`) measured the machine's load, not the mesh.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable

from grpc_resilience_mesh.chaos.experiment.model import LoadSpec
from grpc_resilience_mesh.chaos.run.faults import Injector
from grpc_resilience_mesh.loadgen.outcomes import LoadResult, Outcome

RETURN_WATCH_S = 3.0
"""Load kept on after a restarted process reports SERVING. A caller's reconnect wait is capped
at 1.2 s (grpc_aio_resilience.channel.RECONNECT_BACKOFF_CAP_S, +20% jitter), so in 3 s a return
that comes is seen, and one later than replica-loss's 2.5 s bound is seen as late, not as
missing."""
MOST_EXTRA_S = 30.0
"""The longest the load is extended: a process still not SERVING by then is a failure the
verdict reports (`never reported SERVING`), not a reason to go on."""
CHUNK_S = 1.0
"""The load is extended one second at a time, at the same rate."""


def chunk_of(spec: LoadSpec, load: LoadResult, seconds: float) -> LoadSpec:
    """`spec` for `seconds` more of the same load: its rate (or its concurrency, closed loop)."""
    rate = load.offered_per_s
    requests = max(1, math.ceil(rate * seconds)) if rate else spec.concurrency
    return spec.model_copy(
        update={"requests": requests, "repeat": 1, "max_duration_s": seconds + spec.deadline_s}
    )


def merge(load: LoadResult, part: LoadResult) -> None:
    """`part`'s outcomes, time and CPU counted into `load` (unknown CPU stays unknown)."""
    load.outcomes.extend(part.outcomes)
    load.elapsed_s += part.elapsed_s
    load.add_cpu(part.generator_cpu_s, None if part.mesh_cpu_s is None else part.process_cpu_s)


Load = Callable[
    [str, LoadSpec, asyncio.Event | None, Callable[[Outcome], None] | None], Awaitable[LoadResult]
]
"""The runner's `_load(label, spec, stop, on_outcome)`."""


async def load_until_back(
    run: Load,
    label: str,
    spec: LoadSpec,
    stop: asyncio.Event,
    on_outcome: Callable[[Outcome], None],
    injector: Injector,
    clock: Callable[[], float] = time.monotonic,
) -> LoadResult:
    """`spec`'s load, then more of it while a process the schedule restarts is down, starting,
    or SERVING for less than RETURN_WATCH_S (at most MOST_EXTRA_S more; none once `stop`)."""
    load = await run(label, spec, stop, on_outcome)
    until = clock() + MOST_EXTRA_S
    while not stop.is_set() and clock() < until:
        left = injector.return_left_s(RETURN_WATCH_S, clock())
        if left <= 0:
            break
        more = chunk_of(spec, load, min(left, CHUNK_S))
        merge(load, await run(label, more, stop, on_outcome))
    return load
