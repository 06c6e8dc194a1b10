"""A kill fault's load lasts until the restarted process has been SERVING a while: a slow
start on a busy machine no longer ends the load before the replica could come back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from grpc_resilience_mesh.chaos.experiment.model import LoadSpec
from grpc_resilience_mesh.chaos.run.faults import Injector
from grpc_resilience_mesh.chaos.run.return_watch import (
    MOST_EXTRA_S,
    RETURN_WATCH_S,
    load_until_back,
)
from grpc_resilience_mesh.loadgen.outcomes import LoadResult, Outcome

RATE = 40.0


class FakeLoad:
    """The runner's `_load` on a fake clock: each load takes requests / RATE seconds, and the
    restarted process reports SERVING `serving_at` seconds into the schedule (None: never)."""

    def __init__(self, injector: Injector, serving_at: float | None) -> None:
        self.now = 0.0
        self.injector = injector
        self.serving_at = serving_at
        self.sent: list[int] = []

    def clock(self) -> float:
        return self.now

    async def __call__(
        self,
        label: str,
        spec: LoadSpec,
        stop: asyncio.Event | None,
        on_outcome: Callable[[Outcome], None] | None,
    ) -> LoadResult:
        start = self.now
        self.now += spec.requests / RATE
        if self.serving_at is not None and self.now >= self.serving_at:
            self.injector.served_at.setdefault("profile-2", self.serving_at)
        self.sent.append(spec.requests)
        outcomes = [
            Outcome("home", "OK", 0.01, started_s=start + i / RATE) for i in range(spec.requests)
        ]
        return LoadResult(outcomes, elapsed_s=spec.requests / RATE, offered_per_s=RATE)


def _injector(restarting: set[str]) -> Injector:
    injector = Injector(toxiproxy=None, admin={})
    injector.restarting = restarting
    return injector


async def _run(serving_at: float | None, restarting: set[str]) -> tuple[FakeLoad, LoadResult]:
    injector = _injector(restarting)
    fake = FakeLoad(injector, serving_at)
    spec = LoadSpec(requests=280, rate_per_s=RATE, max_duration_s=7)
    load = await load_until_back(
        fake, "under fault", spec, asyncio.Event(), lambda _: None, injector, fake.clock
    )
    return fake, load


async def test_the_load_goes_on_until_a_slow_restart_has_been_serving_a_while() -> None:
    # Restarted at 2.5 s, SERVING at 9.3 s (6.8 s to start): past the 7 s load.
    fake, load = await _run(9.3, {"profile-2"})
    assert fake.sent[0] == 280 and len(fake.sent) > 1
    # One second at a time at the same rate, the last one what was left of RETURN_WATCH_S.
    assert all(n == RATE for n in fake.sent[1:-1]) and 0 < fake.sent[-1] <= RATE
    assert 9.3 + RETURN_WATCH_S <= fake.now < 9.3 + RETURN_WATCH_S + 0.1
    assert len(load.outcomes) == sum(fake.sent)
    assert load.elapsed_s == fake.now


async def test_a_load_that_outlasts_the_return_is_not_extended() -> None:
    fake, _ = await _run(3.5, {"profile-2"})
    assert fake.sent == [280]


async def test_no_restart_in_the_schedule_no_extension() -> None:
    fake, _ = await _run(None, set())
    assert fake.sent == [280]


async def test_a_process_that_never_serves_extends_the_load_a_bounded_time() -> None:
    fake, _ = await _run(None, {"profile-2"})
    assert 7.0 + MOST_EXTRA_S <= fake.now <= 7.0 + MOST_EXTRA_S + 1.0
