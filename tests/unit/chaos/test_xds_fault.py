"""The experiment's `xds` fault (gRFC A33 through the control plane): each wrong name refused
with the close one before anything starts, and the `fault_trace` check telling the three fault
sources apart by the spans they leave."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from grpc_resilience_mesh.chaos.experiment.model import XdsFault
from grpc_resilience_mesh.chaos.scenarios.fault_trace import _measures

NAMES = (
    "Attempt.mesh.v1.RecommendationService.Recommend",
    "Recv.mesh.v1.RecommendationService.Recommend",
)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"edge": "gatway_to_recommendation"}, "did you mean 'gateway_to_recommendation'?"),
        ({"edge": "payment_to_redis"}, "is not dialled through xDS"),
        ({"method": "Recomend"}, "did you mean 'Recommend'?"),
        ({"abort_code": "UNAVAILBLE"}, "did you mean 'UNAVAILABLE'?"),
        ({"abort_code": "OK"}, "code 'OK' is no fault"),
        ({"abort_percent": 0}, "needs abort_percent or delay_percent above 0"),
        ({"abort_percent": 130}, "less than or equal to 100"),
        ({"abort_percent": 0, "delay_percent": 50}, "delay_percent needs delay_s above 0"),
    ],
)
def test_a_bad_xds_fault_is_refused_naming_the_close_name(
    fields: dict[str, Any], words: str
) -> None:
    good = {"type": "xds", "edge": "gateway_to_recommendation", "method": "Recommend"}
    with pytest.raises(ValidationError) as err:
        XdsFault.model_validate({**good, "abort_percent": 30, **fields})
    assert words in str(err.value)


def test_a_fault_on_every_call_has_no_route_method() -> None:
    fault = XdsFault.model_validate(
        {"type": "xds", "edge": "recommendation_to_profile", "delay_percent": 10, "delay_s": 0.1}
    )
    assert fault.route_method is None


def span(name: str, span_id: str, start_ms: float, end_ms: float, **more: Any) -> dict[str, Any]:
    return {"name": name, "span_id": span_id, "start_ns": start_ms * 1e6, "end_ns": end_ms * 1e6,
            "status": {"code": "UNSET"}, **more}  # fmt: skip


def test_fault_trace_tells_an_abort_before_the_server_from_one_on_it_and_where_a_delay_sat() -> (
    None
):
    failed = {"status": {"code": "ERROR"}}
    fault_event = {"events": [{"name": "fault injected"}]}
    traces = {
        "t1": [span(NAMES[0], "a1", 0, 1, **failed)],  # A33: no server span under it
        "t2": [
            span(NAMES[0], "a2", 0, 5, **failed),
            span(NAMES[1], "s2", 1, 4, parent_span_id="a2", **fault_event),
        ],
        "t3": [span(NAMES[0], "a3", 0, 110), span(NAMES[1], "s3", 100, 109, parent_span_id="a3")],
    }
    got = _measures(traces, NAMES)
    assert got["trace_attempts"] == 3 and got["trace_failed_attempts"] == 2
    assert got["trace_failed_unserved"] == 1 and got["trace_fault_events"] == 1
    assert (got["trace_lead_ms_p50"], got["trace_lag_ms_p50"]) == (50.5, 1.0)


def test_fault_trace_waits_for_a_span_longer_than_a_span_writer_waits() -> None:
    from grpc_resilience_mesh.chaos.scenarios.span_wait import CLOSE_WAIT_S, UNSEEN_AFTER_S
    from grpc_resilience_mesh.services.telemetry.tracing.jsonl_exporter import DEFAULT_DELAY_S

    assert CLOSE_WAIT_S > UNSEEN_AFTER_S > DEFAULT_DELAY_S
