"""The adaptive limits on a small, fast backend (issue 45): one replica of 4 workers x 0.25 s
(16 calls/s) under 3x and 8x open-loop load with a 1 s deadline, simulated on a fake clock.

The backend is a FIFO of workers in front of which admission decides; a caller gives up at its
deadline (its call leaves the queue, or frees its worker), as the mesh's pool does with
`abandoned: drop`. With the builders' floor of 20 the limit admits 20 calls to 4 workers, a
queue of 1.25 s against a 1 s deadline: before the fix this model served 0.51 of capacity
with Gradient2 and 0.73 / 0.83 with Vegas (3x / 8x), the real mesh none at all; with the
limits' defaults fitted to the declared 4 workers, 1.0.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import pytest

from grpc_aio_resilience import EventBus, from_dict
from grpc_aio_resilience.admission import Admission, Place
from grpc_aio_resilience.criticality import Criticality
from grpc_aio_resilience.errors import ShedError
from grpc_resilience_mesh.services.policy.pool import MeshServerPolicy

M = "/mesh.v1.RecommendationService/Recommend"
WORKERS, SERVICE_S, DEADLINE_S = 4, 0.25, 1.0
CAPACITY_PER_S = WORKERS / SERVICE_S
DURATION_S, WARMUP_S = 8.0, 3.0
"""As the sweep's points: 8 s of load, the first 3 s left out (the limit starts afresh)."""


class SteppedClock:
    """Time the simulation sets to each event's instant; admission's `admit_now` and
    `release` never sleep."""

    def __init__(self) -> None:
        self.now_s = 0.0

    def now(self) -> float:
        return self.now_s

    async def sleep(self, seconds: float) -> None:
        raise AssertionError("the simulation never queues in admission")


@dataclass
class Call:
    place: Place
    state: str = "waiting"


@dataclass
class Backend:
    """A FIFO of `WORKERS` workers behind admission; events are (time, order, kind, call)."""

    admission: Admission
    clock: SteppedClock
    events: list[tuple[float, int, int, Call]] = field(default_factory=list)
    queue: deque[Call] = field(default_factory=deque)
    busy: int = 0
    served_in_window: int = 0
    seq: int = 0

    def at(self, when_s: float, kind: int, call: Call) -> None:
        self.seq += 1
        heapq.heappush(self.events, (when_s, kind, self.seq, call))

    def arrive(self) -> None:
        try:
            place = self.admission.admit_now(M, Criticality.CRITICAL, DEADLINE_S)
        except ShedError:
            return
        assert place is not None  # no queue discipline: a place or a refusal
        call = Call(place)
        self.queue.append(call)
        self.at(self.clock.now_s + DEADLINE_S, GIVE_UP, call)
        self.dispatch()

    def dispatch(self) -> None:
        while self.busy < WORKERS and self.queue:
            call = self.queue.popleft()
            call.state = "serving"
            self.busy += 1
            self.at(self.clock.now_s + SERVICE_S, FINISH, call)

    def finish(self, call: Call) -> None:
        if call.state != "serving":
            return
        self.busy -= 1
        call.state = "done"
        self.admission.release(call.place, dropped=False)
        self.served_in_window += WARMUP_S <= self.clock.now_s < DURATION_S
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


FINISH, GIVE_UP, ARRIVE = 0, 1, 2
"""At one instant a call that finishes does so before its caller gives up."""


def goodput(limit: dict[str, Any], offered_x: float) -> float:
    """Calls served within their deadline per second of the window, of the capacity."""
    policy = from_dict(
        MeshServerPolicy,
        {
            "max_in_flight": 0,
            "limit": limit,
            "pool": {"workers": WORKERS, "service_time_s": SERVICE_S},
        },
    )
    clock = SteppedClock()
    backend = Backend(Admission("recommendation", policy, clock, EventBus()), clock)
    arrivals = int(DURATION_S * offered_x * CAPACITY_PER_S)
    for n in range(arrivals):
        backend.at(n / (offered_x * CAPACITY_PER_S), ARRIVE, Call((0.0, 0)))
    while backend.events:
        when_s, kind, _, call = heapq.heappop(backend.events)
        clock.now_s = when_s
        if kind == ARRIVE:
            backend.arrive()
        elif kind == FINISH:
            backend.finish(call)
        else:
            backend.give_up(call)
    return backend.served_in_window / ((DURATION_S - WARMUP_S) * CAPACITY_PER_S)


WINDOWED = {"window": {"enabled": True}}
VARIANTS: dict[str, dict[str, Any]] = {
    "vegas": {"algorithm": "vegas", **WINDOWED},
    "gradient2": {"algorithm": "gradient2", **WINDOWED},
    "gradient2-deadline": {"algorithm": "gradient2", "deadline_aware": True, **WINDOWED},
}


@pytest.mark.parametrize("offered_x", [3.0, 8.0])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_an_adaptive_limit_keeps_a_small_backends_goodput(variant: str, offered_x: float) -> None:
    assert goodput(VARIANTS[variant], offered_x) >= 0.9


def test_without_a_limit_the_backend_collapses_so_the_simulation_can_tell() -> None:
    assert goodput({"algorithm": "static"}, 3.0) < 0.1


def test_deadline_aware_admission_alone_refuses_what_cannot_finish() -> None:
    """No limit at all: counting the calls ahead is enough to keep the queue inside 1 s (the
    survivors' average it used before stayed at the service time and admitted every call)."""
    alone = {"algorithm": "static", "deadline_aware": True}
    assert [goodput(alone, x) >= 0.9 for x in (3.0, 8.0)] == [True, True]
