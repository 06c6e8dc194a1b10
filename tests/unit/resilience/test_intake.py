"""CoDel on the wait in front of admission (grpc_aio_resilience.intake), on a manual clock: what a
call's `resilience-timeout-ms` says it waited, and which waits the gate refuses when."""

from __future__ import annotations

import grpc
import pytest

from grpc_aio_resilience import intake
from grpc_aio_resilience.admission import Admission
from grpc_aio_resilience.admission_policy import IntakePolicy, ServerPolicy
from grpc_aio_resilience.criticality import Criticality
from grpc_aio_resilience.errors import ShedError
from grpc_aio_resilience.events import CallShed, Event, EventBus
from tests.unit.resilience.manual_clock import ManualClock

M = "/mesh.v1.Gateway/GetHome"
CODEL = IntakePolicy(discipline="codel", codel_target_s=0.005, codel_interval_s=0.03)


def gate() -> tuple[intake.IntakeGate, ManualClock]:
    clock = ManualClock()
    return intake.IntakeGate(CODEL, clock), clock


async def test_a_wait_within_the_interval_passes_until_waits_have_stood_above_target_for_it() -> (
    None
):
    g, clock = gate()
    assert not g.refuses(0.004)  # within M: never refused
    assert not g.refuses(0.02)  # above M, within N: a burst, not yet a standing queue
    await clock.advance(0.029)
    assert not g.refuses(0.02)
    await clock.advance(0.002)  # every call for N = 30 ms waited more than M
    assert g.standing()
    assert g.refuses(0.006)
    assert not g.refuses(0.005)  # one call within M: the queue emptied, the state ends
    assert not g.standing()
    assert not g.refuses(0.02)


def test_a_wait_past_the_interval_is_refused_at_once() -> None:
    g, _ = gate()
    assert g.refuses(0.031)
    assert not g.refuses(0.005)


def test_off_by_default() -> None:
    assert not intake.IntakeGate(IntakePolicy(), ManualClock()).enabled
    with pytest.raises(ValueError, match="codel_target_s"):
        IntakePolicy(discipline="codel", codel_target_s=0.1, codel_interval_s=0.1)


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ((("resilience-timeout-ms", "250"),), 0.25),
        ((("other", "1"), ("resilience-timeout-ms", b"1500")), 1.5),
        ((("resilience-timeout-ms", "soon"),), None),
        ((("resilience-timeout-ms", "-5"),), None),
        ((("resilience-timeout-ms", "inf"),), None),
        ((), None),
        (None, None),
    ],
)
def test_the_sent_deadline_is_read_or_ignored_never_an_error(
    metadata: tuple[tuple[str, str | bytes], ...] | None, expected: float | None
) -> None:
    assert intake.sent_timeout_s(metadata) == expected


def test_the_wait_is_the_deadline_sent_less_the_deadline_left() -> None:
    assert intake.waited_s(0.25, 0.2) == pytest.approx(0.05)
    assert intake.waited_s(0.25, 0.3) == 0.0  # a coarse header never makes a negative wait
    assert intake.waited_s(None, 0.2) is None
    assert intake.waited_s(0.25, None) is None
    assert intake.timeout_value(0.2504) == "250"


async def test_admission_refuses_a_late_call_with_reason_intake_and_its_wait() -> None:
    bus = EventBus()
    seen: list[Event] = []
    bus.subscribe(seen.append)
    policy = ServerPolicy(max_in_flight=16, intake=CODEL)
    adm = Admission("gateway", policy, ManualClock(), bus)
    assert adm.active
    with pytest.raises(ShedError) as info:
        adm.admit_now(M, Criticality.CRITICAL, 0.2, waited_s=0.05)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert info.value.reason == "intake"
    shed = [e for e in seen if isinstance(e, CallShed)]
    assert [(e.reason, e.waited_s) for e in shed] == [("intake", 0.05)]
    assert adm.admit_now(M, Criticality.CRITICAL, 0.2, waited_s=0.001) is not None
    assert adm.admit_now(M, Criticality.CRITICAL, 0.2, waited_s=None) is not None  # no header
    assert adm.in_flight == 2


def test_without_a_limit_the_gate_alone_makes_admission_active() -> None:
    policy = ServerPolicy(max_in_flight=0, intake=CODEL)
    assert Admission("gateway", policy, ManualClock(), EventBus()).active
    assert not Admission("gateway", ServerPolicy(max_in_flight=0), ManualClock(), EventBus()).active
