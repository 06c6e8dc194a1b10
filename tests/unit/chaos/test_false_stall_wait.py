"""false-stall reads the mailbox once every run of the handler has ended: the pickup that fails a
job as stalled runs nothing, so it is not waited out as a run (it kept blocks-loop 1.6 s
longer)."""

from __future__ import annotations

from grpc_resilience_mesh.chaos.scenarios.receipts.harness import JobTimes
from grpc_resilience_mesh.chaos.scenarios.receipts.stalls import _pickups_that_ran
from grpc_resilience_mesh.services.contracts.receipt_job import STALLED_REASON


def _job(state: str, reason: str = "") -> JobTimes:
    return JobTimes("receipt-ch_block", state, 1, 2, 0.0, 0.0, reason)


def test_the_pickup_that_fails_a_stalled_job_ran_nothing() -> None:
    # blocks-loop as measured: run, run again 1.153 s later, failed on the third pickup
    picked = [100.0, 101.153, 102.774]
    assert _pickups_that_ran(picked, _job("failed", STALLED_REASON)) == [100.0, 101.153]


def test_every_other_pickup_ran_its_handler() -> None:
    assert _pickups_that_ran([100.0], _job("completed")) == [100.0]
    # failed for another reason (a 550): its last pickup ran the handler that failed it
    assert _pickups_that_ran([100.0, 101.2], _job("failed", "smtp 550")) == [100.0, 101.2]
    assert _pickups_that_ran([], _job("failed", STALLED_REASON)) == []
