"""The model behind docs/patterns/overload.md's account of the sweep's p99 at 10x: with a
fixed service time the pool's workers stay in step, so a call that waits at all waits up to a
service time; with a spread of service times they do not (no CPU: virtual time)."""

from __future__ import annotations

from tests.integration.resilience.sweep_probe import simulate


def test_a_fixed_service_time_puts_any_wait_near_a_whole_service_time() -> None:
    for algorithm in ("vegas", "gradient2"):
        low = simulate(algorithm, 0.5).p99_s
        high = simulate(algorithm, 10.0)
        assert high.goodput_vs_capacity >= 0.95, algorithm  # the workers stay busy
        assert high.max_limit > 20, algorithm  # some calls wait for a worker
        assert 1.85 <= high.p99_s / low <= 2.0, algorithm  # and wait nearly a service time


def test_a_lognormal_service_time_breaks_the_step() -> None:
    ratios = []
    for seed in range(5):
        low = simulate("gradient2", 0.5, lognormal=True, seed=seed).p99_s
        ratios.append(simulate("gradient2", 10.0, lognormal=True, seed=seed).p99_s / low)
    assert max(ratios) < 1.5, ratios
