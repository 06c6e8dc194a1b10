"""A backend's declared concurrency fits the adaptive limits' defaults (issue 45): a floor of
20 on a backend that serves 4 at once admits 16 calls that can only queue, so a limit left at
its defaults starts at, and may fall to, what the backend holds; a setting the policy makes is
the user's and stays."""

from __future__ import annotations

from typing import Any

from grpc_aio_resilience import EventBus, from_dict
from grpc_aio_resilience.admission import Admission
from grpc_aio_resilience.admission_policy import LimitPolicy, ServerPolicy
from grpc_aio_resilience.criticality import Criticality
from grpc_aio_resilience.errors import ShedError
from tests.unit.resilience.manual_clock import ManualClock

M = "/mesh.v1.RecommendationService/Recommend"


class FourWorkers(ServerPolicy):
    """A server policy whose backend serves 4 calls at once."""

    __slots__ = ()

    def declared_concurrency(self) -> int | None:
        return 4


def four_workers(**policy: Any) -> FourWorkers:
    base = from_dict(ServerPolicy, policy)
    return FourWorkers(**{name: getattr(base, name) for name in base.__dataclass_fields__})


def test_defaults_fit_the_declared_concurrency_and_settings_made_stay() -> None:
    fitted = LimitPolicy().fitted_to(4)
    assert (fitted.gradient2.initial_limit, fitted.gradient2.min_limit) == (4, 4)
    assert (fitted.aimd.initial_limit, fitted.aimd.min_limit) == (4, 4)
    assert fitted.vegas.initial_limit == 4
    own = from_dict(LimitPolicy, {"gradient2": {"initial_limit": 8, "min_limit": 2}})
    assert own.fitted_to(4).gradient2 == own.gradient2
    assert LimitPolicy().fitted_to(None) == LimitPolicy() == LimitPolicy().fitted_to(40)
    assert LimitPolicy().fitted_to(20) == LimitPolicy(), "the catalogue's 20 workers: as before"


async def test_a_gradient2_limit_on_a_small_backend_stays_between_its_workers_and_20() -> None:
    """Each round the limit's calls queue for 4 workers x 0.25 s: RTT = limit / 4 x 0.25 s;
    windowed, as the sweep wires it (per call, the long average follows the queued RTT)."""
    clock = ManualClock()
    policy = four_workers(limit={"algorithm": "gradient2", "window": {"enabled": True}})
    adm = Admission("recommendation", policy, clock, EventBus())
    seen = [adm.limit]
    for _ in range(100):
        places = [adm.admit_now(M, Criticality.CRITICAL, None) for _ in range(adm.limit)]
        await clock.advance(0.25 * max(1.0, adm.limit / 4))
        for place in places:
            assert place is not None
            adm.release(place, dropped=False)
        seen.append(adm.limit)
    assert seen[0] == 4 and min(seen) >= 4, seen
    assert max(seen) < 20, "calls admitted beyond 20 / 4 x 0.25 s = 1.25 s of queue"


async def test_deadline_aware_admission_counts_the_calls_ahead_of_a_new_one() -> None:
    """4 workers x 0.25 s: behind 11 calls a new one starts after 2 rounds, done in 0.75 s;
    behind 12 it would take 1 s, more than the 0.9 s its caller has left."""
    clock = ManualClock()
    policy = four_workers(max_in_flight=0, limit={"deadline_aware": True}, expected_service_s=0.25)
    adm = Admission("recommendation", policy, clock, EventBus())
    for _ in range(11):
        adm.admit_now(M, Criticality.CRITICAL, 0.9)
    assert adm.expected_now_s() == 0.75
    adm.admit_now(M, Criticality.CRITICAL, 0.9)
    try:
        adm.admit_now(M, Criticality.CRITICAL, 0.9)
    except ShedError as err:
        assert err.reason == "deadline"
    else:
        raise AssertionError("a call that cannot finish in its deadline must be refused")


def refusal(adm: Admission, remaining_s: float | None) -> str:
    """Why admission refused a call with `remaining_s` left ("" when it gave a place)."""
    try:
        adm.admit_now(M, Criticality.CRITICAL, remaining_s)
    except ShedError as err:
        return err.reason
    return ""


async def test_a_fitted_limit_waits_a_call_only_where_its_deadline_holds_the_wait() -> None:
    """Vegas alone (no deadline-aware admission), 4 workers x 0.25 s, limit 4: a call with a
    deadline may wait behind the workers, in up to 2 places beyond them, when the worker it
    waits for frees in time; one with none gets the limit's 4 places only."""
    clock = ManualClock()
    policy = four_workers(limit={"algorithm": "vegas"}, expected_service_s=0.25)
    adm = Admission("recommendation", policy, clock, EventBus())
    assert [refusal(adm, None) for _ in range(5)] == ["", "", "", "", "limit"]
    assert adm.limit == 4
    assert refusal(adm, 0.49) == "deadline", "behind 4 calls just started: 0.5 s"
    assert [refusal(adm, 1.0) for _ in range(3)] == ["", "", "limit"], "6 places at most"


async def test_a_waiting_place_opens_as_the_worker_ahead_nears_its_end() -> None:
    """1 worker x 0.25 s, a 0.498 s deadline (2 service times less a 2 ms hop): behind a call
    that just started, a new one would end at 0.5 s, too late; 10 ms on, at 0.49 s, in time."""
    clock = ManualClock()
    one = from_dict(ServerPolicy, {"limit": {"algorithm": "gradient2"}, "expected_service_s": 0.25})
    policy = type("OneWorker", (FourWorkers,), {"declared_concurrency": lambda self: 1})(
        **{name: getattr(one, name) for name in one.__dataclass_fields__}
    )
    adm = Admission("recommendation", policy, clock, EventBus())
    assert [refusal(adm, 0.498), refusal(adm, 0.498)] == ["", "deadline"]
    await clock.advance(0.01)
    assert refusal(adm, 0.498) == ""


def test_a_library_user_declares_the_concurrency_as_an_option_without_subclassing() -> None:
    policy = from_dict(
        ServerPolicy,
        {"limit": {"algorithm": "gradient2"}, "backend_concurrency": 4, "expected_service_s": 0.25},
    )
    adm = Admission("orders", policy, ManualClock(), EventBus())
    assert (policy.declared_concurrency(), adm.limit) == (4, 4)
    assert [refusal(adm, None) for _ in range(5)][-1] == "limit"
    assert refusal(adm, 1.0) == "", "a waiting place its 1 s deadline holds"
