"""The PID rejector (`limit.algorithm: pid`, after Uber's Cinnamon) on the overload grid's model
(tests/unit/mesh/backend_model.py, issue 45 item 6): the claim the adaptive limits keep, at
every one of the 72 cells, with the same named corner.

Two mechanisms made it collapse on one worker. A ratio says how many arrivals to refuse, not
which, and the FIFO behind it served calls whose callers had already given up: on one worker
a call that finds one served and one waiting ends past a 2-service-time deadline and holds
the worker until then (goodput 0.67-0.75 at every 1-worker, 2-service-time cell). And a
target of half a service time is half a call on one worker: the ratio held the queue empty
much of the time, the worker idle until the next arrival (0.84-0.86 at 1.5x).
"""

from __future__ import annotations

from collections import Counter

import pytest

import grpc_aio_resilience.events as events
from tests.unit.mesh.backend_model import Cell, simulate
from tests.unit.mesh.test_overload_grid_model import CELLS, COLLAPSE, GRID, reachable

PID = {"algorithm": "pid"}


def test_every_cell_keeps_the_claim_or_its_named_mechanisms_bound() -> None:
    missed = []
    for cell in CELLS:
        outcome = simulate(cell, PID)
        floor = reachable(cell) * (0.97 if reachable(cell) < GRID.claim.min_goodput else 1.0)
        if not (outcome.goodput >= max(floor, COLLAPSE) and outcome.p99_s <= cell.deadline_s):
            missed.append((cell, round(outcome.goodput, 3), round(outcome.p99_s, 3)))
    assert missed == []


def refusals(cell: Cell, monkeypatch: pytest.MonkeyPatch) -> tuple[float, Counter[str]]:
    """The cell's goodput and its refusals by reason."""
    seen: Counter[str] = Counter()
    emit = events.EventBus.emit

    def counting(bus: events.EventBus, event: events.Event) -> None:
        if isinstance(event, events.CallShed):
            seen[event.reason] += 1
        emit(bus, event)

    monkeypatch.setattr(events.EventBus, "emit", counting)
    return simulate(cell, PID).goodput, seen


def test_one_worker_at_8x_refuses_the_late_calls_and_keeps_its_capacity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The issue's cell (1 worker x 0.25 s, a 0.5 s attempt, 8x): calls the queue would make
    late are refused for their deadlines, not served for nobody."""
    goodput, seen = refusals(Cell(1, 0.25, 2, 8), monkeypatch)
    assert goodput >= GRID.claim.min_goodput
    assert seen["deadline"] > 0


def test_with_a_longer_deadline_the_ratio_does_the_refusing_on_one_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the deadline holds a queue, the ratio (least critical first) refuses most calls,
    and holds a waiting call for the worker: >= 0.9 at 1.5x, where half a call gave 0.86."""
    for offered_x in (1.5, 8):
        goodput, seen = refusals(Cell(1, 0.25, 4, offered_x), monkeypatch)
        assert goodput >= GRID.claim.min_goodput, offered_x
        assert seen["ratio"] > seen["deadline"], (offered_x, seen)
