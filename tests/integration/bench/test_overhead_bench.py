"""`mesh bench overhead` on a tiny workload: every variant runs, and runs through what it names.

Not a timing test: the figures themselves are benchmarks (docs/results/), never asserted.
"""

from __future__ import annotations

import pytest

from grpc_resilience_mesh.bench.overhead import run_overhead_bench

pytestmark = pytest.mark.timeout(60)


async def test_every_variant_is_measured_with_ratios_to_raw() -> None:
    result = await run_overhead_bench(calls=40, concurrency=4, rounds=2)
    variants = result["variants"]
    assert list(variants) == [
        "raw",
        "floor",
        "hand",
        "client",
        "client-layered",
        "client-intercepted",
        "server",
        "server-intercepted",
        "full",
        "full+replicas",
        "full+replicas-rr",
    ]
    for row in variants.values():
        assert row["throughput_rps"] > 0
        assert row["loop_cpu_us_per_call"] > 0
        assert row["process_cpu_us_per_call"] > 0
        assert row["p50_ms"] <= row["p99_ms"]
    assert variants["raw"]["cpu_ratio"] == variants["raw"]["throughput_ratio"] == 1.0
    assert result["cpu_ratio"] == variants["full"]["cpu_ratio"]
    expected = variants["full"]["loop_cpu_us_per_call"] - variants["floor"]["loop_cpu_us_per_call"]
    assert result["ours_us_per_call"] == pytest.approx(expected)
    raw = variants["raw"]["loop_cpu_us_per_call"]
    assert result["ours_ratio"] == pytest.approx(expected / raw)
    versus_hand = (
        variants["client"]["loop_cpu_us_per_call"] - variants["hand"]["loop_cpu_us_per_call"]
    )
    assert result["client_minus_hand_us_per_call"] == pytest.approx(versus_hand)
    layered = (
        variants["client-layered"]["loop_cpu_us_per_call"]
        - variants["client"]["loop_cpu_us_per_call"]
    )
    assert result["fused_saves_us_per_call"] == pytest.approx(layered)
    intercepted = (
        variants["client-intercepted"]["loop_cpu_us_per_call"]
        - variants["client"]["loop_cpu_us_per_call"]
    )
    assert result["direct_saves_us_per_call"] == pytest.approx(intercepted)
    mounted = (
        variants["server-intercepted"]["loop_cpu_us_per_call"]
        - variants["server"]["loop_cpu_us_per_call"]
    )
    assert result["mount_saves_us_per_call"] == pytest.approx(mounted)
    over_raw = variants["full"]["loop_cpu_us_per_call"] - raw
    assert result["full_minus_raw_us_per_call"] == pytest.approx(over_raw)


async def test_tracing_variants_export_one_span_per_hop_and_attempt() -> None:
    calls, rounds = 30, 1
    result = await run_overhead_bench(calls=calls, concurrency=3, rounds=rounds, tracing=True)
    variants = result["variants"]
    assert list(variants) == [
        "raw",
        "floor",
        "hand",
        "client",
        "client-layered",
        "client-intercepted",
        "server",
        "server-intercepted",
        "full",
        "full+replicas",
        "full+replicas-rr",
        "full+tracing",
        "full+tracing-file",
        "raw+stock-otel",
    ]
    # Warm-up calls are traced too; every measured call makes its spans.
    warm_up = min(calls, 500)
    total = warm_up + calls * rounds
    # Ours: a server span, a logical-call span and an attempt span per call.
    assert variants["full+tracing"]["spans_exported"] == 3 * total
    # Stock: a client span and a server span per call.
    assert variants["raw+stock-otel"]["spans_exported"] == 2 * total
