"""The soak's growth verdict: relative for memory, relative plus a small slack for descriptors."""

from __future__ import annotations

from grpc_resilience_mesh.chaos.soak import Sample, SoakConfig, growth_of

CONFIG = SoakConfig(duration_s=60, warmup_s=10, window_s=10)


def samples(service: str, rss: tuple[int, int], fds: tuple[int, int]) -> list[Sample]:
    """Five samples in the first window (10-20 s), five in the last (50-60 s)."""
    first = [Sample(10 + 2 * i, service, rss[0], fds[0]) for i in range(5)]
    last = [Sample(50 + 2 * i, service, rss[1], fds[1]) for i in range(5)]
    return first + last


def verdicts(service: str, rss: tuple[int, int], fds: tuple[int, int]) -> dict[str, bool]:
    return {g.metric: g.passed for g in growth_of(samples(service, rss, fds), CONFIG, 60.0)}


def test_memory_may_grow_ten_percent_and_no_more() -> None:
    assert verdicts("gateway", (1000, 1090), (20, 20))["rss_kb"] is True
    assert verdicts("gateway", (1000, 1110), (20, 20))["rss_kb"] is False


def test_a_pool_filling_up_is_within_the_descriptor_slack_a_leak_is_not() -> None:
    # 18 -> 21 is +17%: a Redis pool reaching its size late in a short soak.
    assert verdicts("notification", (1000, 1000), (18, 21))["fds"] is True
    assert verdicts("notification", (1000, 1000), (18, 24))["fds"] is False


def test_peers_are_reported_not_judged() -> None:
    assert verdicts("redis", (1000, 3000), (12, 40)) == {"rss_kb": True, "fds": True}
