"""One percentile definition (grpc_resilience_mesh.loadgen.percentile, nearest rank) behind every
latency figure the project prints: experiment reports, the load result, and each benchmark's
p50/p99."""

from __future__ import annotations

import pytest

from grpc_resilience_mesh.bench import mesh_client, overhead, proxy
from grpc_resilience_mesh.chaos.run.measure import load_metrics
from grpc_resilience_mesh.loadgen.in_process import LoadResult, Outcome
from grpc_resilience_mesh.loadgen.percentile import percentile

# Four latencies: the median of an even count (2.5) and an interpolated or extrapolated p99
# (statistics.quantiles gives 15.76, past the slowest) are values no request had.
SAMPLES_MS = [3.0, 10.0, 1.0, 2.0]


@pytest.mark.parametrize(("q", "expected"), [(0, 1.0), (25, 1.0), (50, 2.0), (99, 10.0)])
def test_nearest_rank_is_always_a_latency_some_request_had(q: float, expected: float) -> None:
    assert percentile(SAMPLES_MS, q) == expected


def test_a_percentile_outside_0_to_100_is_refused() -> None:
    with pytest.raises(ValueError, match=r"expected 0\.\.100"):
        percentile(SAMPLES_MS, 0.99 * 1000)


def test_every_caller_reports_the_same_p50_and_p99_for_the_same_samples() -> None:
    expected = {"p50_ms": 2.0, "p99_ms": 10.0}
    seconds = [v / 1000 for v in SAMPLES_MS]
    result = LoadResult([Outcome("home", "OK", s) for s in seconds], elapsed_s=1.0)
    figures = {
        "bench mesh": mesh_client.summary(4, 1.0, {}, 0, SAMPLES_MS),
        "bench proxy": proxy._summary(SAMPLES_MS, 1.0),
        "bench overhead": overhead._summary(seconds, 1.0, 0.001, 0.002),
        "experiment report": load_metrics(result),
        "load result": {"p50_ms": result.latency_ms(50), "p99_ms": result.latency_ms(99)},
    }
    for caller, got in figures.items():
        assert {k: round(got[k], 9) for k in expected} == expected, caller
