"""`python -m grpc_resilience_mesh.bench.aio_intake`: a grpc.aio server takes calls from grpc core
one at a time, a few loop iterations each, so a busy loop leaves calls waiting in front of every
layer."""

from __future__ import annotations

from grpc_resilience_mesh.bench.aio_intake import Intake, line, measure


def test_a_busy_loop_takes_fewer_than_one_call_per_iteration() -> None:
    intake = measure(calls=40, busy_ms=1.0)
    assert intake.calls == 40
    assert intake.iterations >= 40, "grpc.aio requests one call at a time from core"
    assert intake.calls_per_iteration < 1.0
    assert intake.waited_max_ms >= 40 * 1.0, "the last call waited at least 40 burns"


def test_the_line_names_the_figures() -> None:
    text = line(Intake(1.0, 500, 2200, 1787.0, 5532.0))
    assert text == (
        "busy 1 ms per loop iteration: 500 calls taken in 2200 iterations (0.23 per "
        "iteration); waited in front p50 1787 ms, max 5532 ms"
    )
