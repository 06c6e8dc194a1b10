"""A receipt's trace continues in the worker: one CONSUMER span per attempt, child of the
charge's span whose context the job carries, written where `mesh traces` reads them."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from grpc_resilience_mesh.client import traces as tr
from grpc_resilience_mesh.services.contracts.receipt_job import (
    JOB_NAME,
    Receipt,
    ReceiptRetry,
    job_id_for,
)
from grpc_resilience_mesh.services.telemetry.tracing import TRACER_NAME, setup_tracing
from tests.e2e.jobs.jobs_helpers import receipt, wait_state, worker_config


@pytest.fixture
async def traced(
    redis_server: Any,
    smtp_sink: Any,
    queue_name: str,
    run_worker: Callable[..., Any],
    tmp_path: Path,
) -> tuple[TracerProvider, Path]:
    """A worker whose spans go to <tmp>/traces/notification.jsonl, as `mesh up` sets it up."""
    traces_dir = tmp_path / "traces"
    provider = setup_tracing("notification", {"MESH_TRACES_DIR": str(traces_dir)})
    assert provider is not None
    run_worker(
        worker_config(redis_server.addr, smtp_sink.addr, queue_name),
        provider.get_tracer(TRACER_NAME),
    )
    return provider, traces_dir


async def _enqueue_traced(queue: Any, r: Receipt, parent_span_id: str) -> tuple[str, str]:
    """The receipt's job, carrying a fresh trace context; (job id, trace id)."""
    trace_id = secrets.token_hex(16)
    job_id = job_id_for(r.charge_id)
    await queue.add(
        JOB_NAME,
        r.to_data({"traceparent": f"00-{trace_id}-{parent_span_id}-01"}),
        ReceiptRetry(attempts=3, backoff_s=0.1, jitter=0.0).job_options(job_id),
    )
    return job_id, trace_id


def _spans(provider: TracerProvider, traces_dir: Path, trace_id: str) -> list[dict[str, Any]]:
    """The trace as `mesh traces` reads it, oldest span first."""
    provider.force_flush()
    provider.shutdown()
    assert (traces_dir / "notification.jsonl").exists()
    found = tr.find_trace(tr.group_traces(tr.load_spans(tr.trace_files(traces_dir))), trace_id)
    assert found is not None, "mesh traces does not see the receipt's trace"
    return sorted(found[1], key=lambda s: s["start_ns"])


async def test_each_attempt_is_a_span_under_the_charge_and_mesh_traces_finds_it(
    traced: tuple[TracerProvider, Path], smtp_sink: Any, queue_name: str, queue: Any
) -> None:
    charge_span = secrets.token_hex(8)
    r = receipt()
    smtp_sink.mailbox.set_script([{"code": 421, "times": 1, "match": r.charge_id}])
    job_id, trace_id = await _enqueue_traced(queue, r, charge_span)
    assert await wait_state(queue, job_id) == "completed"
    spans = _spans(*traced, trace_id)
    assert [s["name"] for s in spans] == [f"process {queue_name}"] * 2
    assert {s["kind"] for s in spans} == {"CONSUMER"}
    assert {s["parent_span_id"] for s in spans} == {charge_span}
    assert [s["attributes"]["mesh.job.attempt"] for s in spans] == [1, 2]
    assert {s["attributes"]["mesh.charge_id"] for s in spans} == {r.charge_id}
    first, second = spans
    assert first["status"]["code"] == "ERROR"
    retry = [e for e in first["events"] if e["name"] == "retry scheduled"]
    assert len(retry) == 1 and retry[0]["attributes"]["mesh.delay_s"] == 0.1
    assert "421" in retry[0]["attributes"]["mesh.reason"]
    assert second["status"]["code"] != "ERROR"
    assert "receipt sent" in [e["name"] for e in second["events"]]
    gap_s = (second["start_ns"] - first["end_ns"]) / 1e9
    assert 0.1 <= gap_s < 2.0, "the second attempt waits the announced delay"


async def test_a_permanent_failure_is_an_event_on_the_only_span(
    traced: tuple[TracerProvider, Path], smtp_sink: Any, queue: Any
) -> None:
    r = receipt()
    smtp_sink.mailbox.set_script([{"code": 550, "match": r.charge_id}])
    job_id, trace_id = await _enqueue_traced(queue, r, secrets.token_hex(8))
    assert await wait_state(queue, job_id) == "failed"
    (span,) = _spans(*traced, trace_id)
    failed = [e for e in span["events"] if e["name"] == "job failed"]
    assert failed and failed[0]["attributes"]["mesh.reason"] == "permanent"
    assert "550" in failed[0]["attributes"]["mesh.error"]
