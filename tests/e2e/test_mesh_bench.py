"""`mesh bench mesh` on a tiny workload: the floor and a mesh variant are measured as
processes, every process on GetHome's path is charged CPU, and the ratios are to the floor.

Not a timing test: the figures themselves are benchmarks (docs/results/), never asserted.
"""

from __future__ import annotations

import pytest

from grpc_resilience_mesh.bench.mesh import FLOOR, run_mesh_bench

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


def test_the_floor_and_a_traced_mesh_are_measured_per_process() -> None:
    result = run_mesh_bench(requests=100, rounds=1, variants=("traced",), warmup=20)
    variants = result["variants"]
    assert list(variants) == [FLOOR, "traced"]
    assert set(variants[FLOOR]["cpu_ms_per_request"]) == {
        "gateway",
        "recommendation",
        "profile",
        "client",
    }
    assert set(variants["traced"]["cpu_ms_per_request"]) == {
        "gateway",
        "recommendation",
        "profile",
        "proxy",
        "client",
    }
    for row in variants.values():
        assert row["requests"] == 100
        assert 0 <= row["degraded"] <= row["requests"]
        assert row["throughput_rps"] > 0
        assert row["p50_ms"] <= row["p99_ms"]
        for process in ("gateway", "recommendation", "profile"):
            assert row["cpu_ms_per_request"][process] > 0
        assert row["total_cpu_ms_per_request"] == pytest.approx(
            sum(row["cpu_ms_per_request"].values())
        )
    assert variants[FLOOR]["degraded"] == 0  # no deadlines, no faults: every answer in full
    assert variants[FLOOR]["cpu_ratio"] == variants[FLOOR]["throughput_ratio"] == 1.0
    traced = variants["traced"]
    assert traced["cpu_ratio"] == pytest.approx(
        traced["total_cpu_ms_per_request"] / variants[FLOOR]["total_cpu_ms_per_request"]
    )


def test_an_unknown_variant_is_refused_before_anything_starts() -> None:
    with pytest.raises(ValueError, match="unknown variant"):
        run_mesh_bench(requests=100, rounds=1, variants=("bogus",))
