"""A limit that never moves (the reference's `FixedLimit`): today's static `max_in_flight`."""

from __future__ import annotations

from grpc_aio_resilience.limits.base import check_positive


class FixedLimit:
    """`FixedLimit.of(n)`: samples are accepted and ignored."""

    def __init__(self, limit: int) -> None:
        check_positive("limit", limit)
        self._limit = limit

    @property
    def limit(self) -> int:
        return self._limit

    def on_sample(self, start_s: float, rtt_s: float, inflight: int, dropped: bool) -> None:
        del start_s, rtt_s, inflight, dropped

    def __repr__(self) -> str:
        return f"FixedLimit(limit={self._limit})"
