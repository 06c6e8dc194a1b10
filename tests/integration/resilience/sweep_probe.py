"""Why the overload sweep's adaptive lines sit at their p99 bound: a simulation on virtual time.

One replica of `overload-sweep`'s backend (20 workers x 1 s, FIFO) behind our windowed
VegasLimit or Gradient2Limit (the reference's algorithms inside its WindowedLimit, as the
sweep's lines wire them): calls arrive at fixed intervals at x times the replica's 20 calls/s
(the sweep's open loop, split over two replicas), a call over the limit is refused at once, an
admitted one's RTT (its wait for a worker plus its service time) is a sample, and one whose
caller gives up at the 3 s attempt timeout is a drop. No CPU is involved: the figures are the
algorithm's and the pool's alone.

What it shows: with a fixed service time, a pool kept busy stays in step. Its 20 workers took
their first calls within one arrival interval of each other, so they free within that interval
every second, and a call that has to wait at all waits for the next of those moments: up to a
whole service time, however short the queue. Any limit above the workers then puts the
accepted calls' p99 near 2x the half-load p99 (the bound's own "at most about one service
time"), and the real mesh's few milliseconds of its own decide which side of 2.0 a run lands.
With a lognormal service time the workers fall out of step and a short queue waits a fraction
of a service time.

`python -m tests.integration.resilience.sweep_probe [seeds]` prints goodput / capacity, the
accepted p99 against the half-load p99, and the highest limit, per line, distribution and
load, over the sweep's 8 s point (the first 3 s left out).
"""

from __future__ import annotations

import heapq
import random
import sys
from dataclasses import dataclass

from grpc_aio_resilience.limits import (
    Gradient2Limit,
    Gradient2Settings,
    VegasLimit,
    VegasSettings,
    WindowedLimit,
)

WORKERS, SERVICE_S, ATTEMPT_S = 20, 1.0, 3.0
DURATION_S, WARMUP_S = 8.0, 3.0


@dataclass(frozen=True)
class Point:
    goodput_vs_capacity: float
    p99_s: float
    max_limit: int


def _limit(algorithm: str, rng: random.Random) -> WindowedLimit:
    if algorithm == "vegas":
        return WindowedLimit(VegasLimit(VegasSettings(), jitter=lambda: 0.5 + 0.5 * rng.random()))
    return WindowedLimit(Gradient2Limit(Gradient2Settings()))


def simulate(algorithm: str, x: float, lognormal: bool = False, seed: int = 1) -> Point:
    """One point of one line: `x` times the replica's capacity for DURATION_S."""
    rng = random.Random(seed)
    limit = _limit(algorithm, rng)
    free = [0.0] * WORKERS  # when each worker is next free
    ends: list[tuple[float, float, float, int, bool]] = []  # (end, start, rtt, inflight, drop)
    accepted: list[float] = []
    inflight, highest = 0, 0
    rate = x * WORKERS / SERVICE_S
    for i in range(int(rate * DURATION_S)):
        t = i / rate
        while ends and ends[0][0] <= t:  # completions up to now feed the limit
            end, start, rtt, then, dropped = heapq.heappop(ends)
            inflight -= 1
            limit.on_sample(start, rtt, then, dropped)
            if not dropped and WARMUP_S <= end <= DURATION_S:
                accepted.append(rtt)
        highest = max(highest, limit.limit)
        if inflight >= limit.limit:
            continue  # refused at once
        inflight += 1
        service = SERVICE_S * (rng.lognormvariate(-0.125, 0.5) if lognormal else 1.0)
        worker = min(range(WORKERS), key=free.__getitem__)
        begin = max(t, free[worker])
        if begin + service - t > ATTEMPT_S:  # the caller gives up first
            free[worker] = max(free[worker], min(begin, t + ATTEMPT_S))
            heapq.heappush(ends, (t + ATTEMPT_S, t, ATTEMPT_S, inflight, True))
        else:
            free[worker] = begin + service
            heapq.heappush(ends, (begin + service, t, begin + service - t, inflight, False))
    accepted.sort()
    p99 = accepted[min(len(accepted) - 1, int(0.99 * len(accepted)))] if accepted else 0.0
    capacity = WORKERS / SERVICE_S * (DURATION_S - WARMUP_S)
    return Point(len(accepted) / capacity, p99, highest)


def main(seeds: int) -> None:
    print("line       service    load  goodput/capacity  p99 / p99 at 0.5x (per seed)  max limit")
    for algorithm in ("vegas", "gradient2"):
        for lognormal in (False, True):
            low = [simulate(algorithm, 0.5, lognormal, s).p99_s for s in range(seeds)]
            for x in (2.0, 5.0, 10.0):
                points = [simulate(algorithm, x, lognormal, s) for s in range(seeds)]
                ratios = " ".join(f"{p.p99_s / lo:.2f}" for p, lo in zip(points, low, strict=True))
                print(
                    f"{algorithm:<10} {'lognormal' if lognormal else 'fixed':<9} {x:>4.0f}x  "
                    f"{min(p.goodput_vs_capacity for p in points):>16.2f}  {ratios:<28}  "
                    f"{max(p.max_limit for p in points):>9}"
                )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
