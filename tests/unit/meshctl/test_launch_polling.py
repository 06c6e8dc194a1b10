"""The launcher's one poller: asks until ready, gives up after its timeout, on a fake clock."""

from __future__ import annotations

import pytest

from meshctl.launch.polling import poll_until


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_returns_as_soon_as_the_probe_holds() -> None:
    clock = FakeClock()
    answers = iter([False, False, True])
    assert poll_until(lambda: next(answers), 1.0, 0.05, clock=clock, sleep=clock.sleep)
    assert clock.now == pytest.approx(0.1)


def test_gives_up_after_the_timeout() -> None:
    clock = FakeClock()
    asked = 0

    def never() -> bool:
        nonlocal asked
        asked += 1
        return False

    assert not poll_until(never, 1.0, 0.25, clock=clock, sleep=clock.sleep)
    assert 1.0 < clock.now <= 1.25 and asked == 6


def test_a_probe_that_raises_ends_the_wait() -> None:
    clock = FakeClock()

    def broken() -> bool:
        raise RuntimeError("exited")

    with pytest.raises(RuntimeError, match="exited"):
        poll_until(broken, 1.0, clock=clock, sleep=clock.sleep)
