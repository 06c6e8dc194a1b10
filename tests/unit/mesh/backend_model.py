"""A fake-clock model of a declared backend behind a server's admission (issue 45): a FIFO of
`workers` workers, each call held for a fixed service time, open-loop Poisson arrivals, and a
caller that gives up at its attempt deadline (its call leaves the queue or frees its worker,
as the mesh's pool does with `abandoned: drop`). Admission sees each call's deadline less a
2 ms hop, as a mesh server sees its caller's; goodput counts calls served within it.

It runs in well under a second per cell with no sleeping, so a unit test can hold the grid's
claim at every cell whatever the machine's load; the mesh's own figures come from
`mesh chaos grid overload-grid`.
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from grpc_aio_resilience import EventBus, from_dict
from grpc_aio_resilience.admission import Admission, Place
from grpc_aio_resilience.criticality import Criticality
from grpc_aio_resilience.errors import ShedError
from grpc_resilience_mesh.services.policy.pool import MeshServerPolicy

M = "/mesh.v1.RecommendationService/Recommend"
HOP_S = 0.002
"""What a call's deadline has lost when it reaches admission (the hop from the caller)."""
WARMUP_S, WINDOW_S, WINDOW_CALLS = 3.0, 5.0, 200
"""As the sweep's points: the first 3 s left out (the limit starts afresh), 5 s counted; a
slow, small backend's window is longer, so that it holds 200 service times' worth of calls
(at 1 worker x 1 s, 5 s would count 0-5 calls and a share in steps of 0.2)."""
FINISH, GIVE_UP, ARRIVE = 0, 1, 2
"""At one instant a call that finishes does so before its caller gives up."""


@dataclass(frozen=True)
class Cell:
    """One grid cell: workers per replica, service time, attempt deadline in service times,
    offered load in multiples of the declared capacity (workers / service time)."""

    workers: int
    service_s: float
    deadline_x: float
    offered_x: float

    @property
    def capacity_per_s(self) -> float:
        return self.workers / self.service_s

    @property
    def warmup_s(self) -> float:
        return max(WARMUP_S, 20 * self.service_s)

    @property
    def end_s(self) -> float:
        return self.warmup_s + max(WINDOW_S, WINDOW_CALLS / self.capacity_per_s)

    @property
    def deadline_s(self) -> float:
        return self.deadline_x * self.service_s


class SteppedClock:
    """Time the simulation sets to each event's instant; `admit_now` and `release` never
    sleep."""

    def __init__(self) -> None:
        self.now_s = 0.0

    def now(self) -> float:
        return self.now_s

    async def sleep(self, seconds: float) -> None:
        raise AssertionError("the simulation never queues in admission")


@dataclass
class Call:
    place: Place
    arrived_s: float = 0.0
    state: str = "waiting"


@dataclass
class Backend:
    """The workers behind admission; events are (time, kind, order, call)."""

    cell: Cell
    admission: Admission
    clock: SteppedClock
    events: list[tuple[float, int, int, Call]] = field(default_factory=list)
    queue: deque[Call] = field(default_factory=deque)
    busy: int = 0
    served_in_window: int = 0
    latencies_s: list[float] = field(default_factory=list)
    seq: int = 0

    def at(self, when_s: float, kind: int, call: Call) -> None:
        self.seq += 1
        heapq.heappush(self.events, (when_s, kind, self.seq, call))

    def arrive(self) -> None:
        remaining_s = self.cell.deadline_s - HOP_S
        try:
            place = self.admission.admit_now(M, Criticality.CRITICAL, remaining_s)
        except ShedError:
            return
        assert place is not None  # no queue discipline: a place or a refusal
        call = Call(place, self.clock.now_s)
        self.queue.append(call)
        self.at(self.clock.now_s + remaining_s, GIVE_UP, call)
        self.dispatch()

    def dispatch(self) -> None:
        while self.busy < self.cell.workers and self.queue:
            call = self.queue.popleft()
            call.state = "serving"
            self.busy += 1
            self.at(self.clock.now_s + self.cell.service_s, FINISH, call)

    def finish(self, call: Call) -> None:
        if call.state != "serving":
            return
        self.busy -= 1
        call.state = "done"
        self.admission.release(call.place, dropped=False)
        if self.cell.warmup_s <= self.clock.now_s < self.cell.end_s:
            self.served_in_window += 1
            self.latencies_s.append(self.clock.now_s - call.arrived_s + HOP_S)
        self.dispatch()

    def give_up(self, call: Call) -> None:
        if call.state == "waiting":
            self.queue.remove(call)
        elif call.state == "serving":
            self.busy -= 1
        else:
            return
        call.state = "gone"
        self.admission.release(call.place, dropped=True)
        self.dispatch()

    def run(self, seed: int) -> None:
        rate_per_s = self.cell.offered_x * self.cell.capacity_per_s
        draws = random.Random(seed)
        when_s = draws.expovariate(rate_per_s)
        while when_s < self.cell.end_s:
            self.at(when_s, ARRIVE, Call((0.0, 0)))
            when_s += draws.expovariate(rate_per_s)
        while self.events:
            when_s, kind, _, call = heapq.heappop(self.events)
            self.clock.now_s = when_s
            if kind == ARRIVE:
                self.arrive()
            elif kind == FINISH:
                self.finish(call)
            else:
                self.give_up(call)


@dataclass(frozen=True)
class Outcome:
    """A cell's window: goodput as a share of the declared capacity, and the accepted p99."""

    goodput: float
    p99_s: float


def simulate(cell: Cell, limit: dict[str, Any], seed: int = 45) -> Outcome:
    """The cell under the server policy's `limit:` section (Poisson arrivals from `seed`)."""
    policy = from_dict(
        MeshServerPolicy,
        {
            "max_in_flight": 0,
            "limit": limit,
            "pool": {"workers": cell.workers, "service_time_s": cell.service_s},
        },
    )
    clock = SteppedClock()
    backend = Backend(cell, Admission("recommendation", policy, clock, EventBus()), clock)
    backend.run(seed)
    served = sorted(backend.latencies_s)
    p99_s = served[min(len(served) - 1, int(0.99 * len(served)))] if served else 0.0
    window_s = cell.end_s - cell.warmup_s
    return Outcome(backend.served_in_window / (window_s * cell.capacity_per_s), p99_s)
