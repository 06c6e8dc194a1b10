"""The arithmetic of `mesh bench overhead`'s figures (grpc_resilience_mesh/bench/overhead.py): each
variant against raw grpc.aio, and the headline differences between variants."""

from __future__ import annotations


def with_ratios(variants: dict[str, dict[str, float]]) -> None:
    raw = variants["raw"]
    for row in variants.values():
        row["throughput"] = row["throughput_rps"]
        row["p50_ratio"] = row["p50_ms"] / raw["p50_ms"]
        row["p99_ratio"] = row["p99_ms"] / raw["p99_ms"]
        row["throughput_ratio"] = row["throughput_rps"] / raw["throughput_rps"]
        row["cpu_ratio"] = row["loop_cpu_us_per_call"] / raw["loop_cpu_us_per_call"]
        row["process_cpu_ratio"] = row["process_cpu_us_per_call"] / raw["process_cpu_us_per_call"]


DIFFERENCES: dict[str, tuple[str, str]] = {
    # Loop CPU per call that is ours, beyond what the interceptor API itself costs (issue 41's
    # target: at most 0.15 of a raw call's, `ours_ratio`).
    "ours_us_per_call": ("full", "floor"),
    # The client-side job: our pipeline against the same done by hand, both over a plain
    # server (negative: ours is cheaper).
    "client_minus_hand_us_per_call": ("client", "hand"),
    # The same client pipeline through its chain of layers, against it fused.
    "fused_saves_us_per_call": ("client-layered", "client"),
    # The same client pipeline through grpc.aio's interceptor API (a task per call), against
    # the channel resilient_channel makes, which runs it in the caller's task.
    "direct_saves_us_per_call": ("client-intercepted", "client"),
    # The same server chain as one grpc.aio interceptor, against it mounted past the
    # interceptor API (protect_server, as serve() mounts it).
    "mount_saves_us_per_call": ("server-intercepted", "server"),
    # Everything ours, the interceptor API's share included, over raw grpc.aio.
    "full_minus_raw_us_per_call": ("full", "raw"),
}
"""Headline figures: one variant's loop CPU per call minus another's."""


def differences(variants: dict[str, dict[str, float]]) -> dict[str, float]:
    cpu = {name: row["loop_cpu_us_per_call"] for name, row in variants.items()}
    found = {key: cpu[a] - cpu[b] for key, (a, b) in DIFFERENCES.items()}
    found["ours_ratio"] = found["ours_us_per_call"] / cpu["raw"]
    found["full_minus_raw_ratio"] = found["full_minus_raw_us_per_call"] / cpu["raw"]
    return found
