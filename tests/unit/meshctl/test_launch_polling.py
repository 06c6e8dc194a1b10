"""The launcher's one poller: asks until ready, gives up after its timeout, on a fake clock."""

from __future__ import annotations

import pytest

from grpc_resilience_mesh.launch.polling import poll_until
from tests.support.fake_clock import FakeClock


def test_returns_as_soon_as_the_probe_holds() -> None:
    clock = FakeClock(0.0)
    answers = iter([False, False, True])
    assert poll_until(lambda: next(answers), 1.0, 0.05, clock=clock.now, sleep=clock.advance)
    assert clock.now() == pytest.approx(0.1)


def test_gives_up_after_the_timeout() -> None:
    clock = FakeClock(0.0)
    asked = 0

    def never() -> bool:
        nonlocal asked
        asked += 1
        return False

    assert not poll_until(never, 1.0, 0.25, clock=clock.now, sleep=clock.advance)
    assert 1.0 < clock.now() <= 1.25 and asked == 6


def test_a_probe_that_raises_ends_the_wait() -> None:
    clock = FakeClock(0.0)

    def broken() -> bool:
        raise RuntimeError("exited")

    with pytest.raises(RuntimeError, match="exited"):
        poll_until(broken, 1.0, clock=clock.now, sleep=clock.advance)
