"""Why Vegas breaks down in front of a small worker pool: a simulation on virtual time.

One replica of the overload experiments' backend (2 workers x 100 ms, FIFO), behind our
VegasLimit (the reference's algorithm, differentially tested against Netflix's) as the
admission layer uses it: a call over the limit is refused at once, an admitted one's RTT (its
wait for a worker plus its service time) is a sample, and a call its caller gives up on at the
attempt timeout (0.35 s) is a drop with that RTT. Arrivals are Poisson at x times the pool's
20 calls/s. No CPU is involved: the figures are the algorithm's alone.

`python -m tests.integration.resilience.vegas_probe [x] [seconds]` prints, per second, the
limit, the no-load RTT Vegas measures against, the calls served in time and their p99.
"""

from __future__ import annotations

import heapq
import random
import sys
from dataclasses import dataclass, field

from grpc_aio_resilience.limits import VegasLimit, VegasSettings

WORKERS, SERVICE_S, TIMEOUT_S = 2, 0.1, 0.35


@dataclass
class Second:
    limit: list[int] = field(default_factory=list)
    noload_ms: list[float] = field(default_factory=list)
    good: list[float] = field(default_factory=list)
    probes: int = 0


def simulate(x: float, seconds: float, seed: int = 7, **settings: int) -> list[Second]:
    rng = random.Random(seed)
    vegas = VegasLimit(VegasSettings(**settings), jitter=lambda: 0.5 + 0.5 * rng.random())
    free = [0.0] * WORKERS  # when each worker is next free
    ends: list[tuple[float, float, float, int]] = []  # (end, start, rtt, inflight then)
    out = [Second() for _ in range(int(seconds))]
    inflight, t = 0, 0.0
    while t < seconds:
        t += rng.expovariate(x * WORKERS / SERVICE_S)
        while ends and ends[0][0] <= t:  # completions up to now feed the limit
            end, start, rtt, then = heapq.heappop(ends)
            inflight -= 1
            before = vegas.rtt_noload_s
            vegas.on_sample(start, rtt, then, rtt >= TIMEOUT_S)
            second = out[min(int(end), len(out) - 1)]
            second.probes += vegas.rtt_noload_s > before > 0
            if rtt < TIMEOUT_S:
                second.good.append(rtt)
        if inflight >= vegas.limit:
            continue  # refused at once
        inflight += 1
        worker = min(range(WORKERS), key=free.__getitem__)
        begin = max(t, free[worker])
        if begin + SERVICE_S - t > TIMEOUT_S:  # the caller gives up first
            free[worker] = max(free[worker], min(begin, t + TIMEOUT_S))
            heapq.heappush(ends, (t + TIMEOUT_S, t, TIMEOUT_S, inflight))
        else:
            free[worker] = begin + SERVICE_S
            heapq.heappush(ends, (begin + SERVICE_S, t, begin + SERVICE_S - t, inflight))
        second = out[min(int(t), len(out) - 1)]
        second.limit.append(vegas.limit)
        second.noload_ms.append(vegas.rtt_noload_s * 1000)
    return out


def main(x: float, seconds: float) -> None:
    print("second  limit  no-load RTT ms  probes raising it  served in time/s  p99 ms")
    for i, s in enumerate(simulate(x, seconds)):
        good = sorted(s.good)
        p99 = good[min(len(good) - 1, int(0.99 * len(good)))] * 1000 if good else 0.0
        print(
            f"{i:>6}  {max(s.limit, default=0):>5}  {max(s.noload_ms, default=0):>14.0f}  "
            f"{s.probes:>17}  {len(good):>16}  {p99:>6.0f}"
        )


if __name__ == "__main__":
    args = [float(a) for a in sys.argv[1:]]
    main(args[0] if args else 5.0, args[1] if len(args) > 1 else 20.0)
