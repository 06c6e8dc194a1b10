"""Outlier ejection's settings (an edge policy's `outlier:` section), after gRFC A50 and Envoy.

A50's `failure_percentage_ejection` (per interval: a replica with at least `request_volume`
calls whose failures reach `failure_percentage` is ejected, when at least `minimum_hosts`
replicas had that volume) plus Envoy's `consecutive_5xx` (`consecutive_failures` in a row
eject at once). An ejection lasts `base_ejection_s` times the replica's ejection count, at most
max(base_ejection_s, max_ejection_s); the count falls by one per interval the replica spends
in rotation. At most `max_ejected_percent` of the replicas are out at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpc_aio_resilience.options import check, option


@dataclass(frozen=True, slots=True)
class OutlierPolicy:
    """When a replica of a dependency is taken out of rotation, and for how long."""

    enabled: bool = option(False, doc="off: every replica stays in rotation")
    consecutive_failures: int = option(5, ge=1, le=1000, doc="Envoy's consecutive_5xx")
    failure_percentage: float = option(50.0, gt=0, le=100, doc="A50's failure_percentage threshold")
    request_volume: int = option(10, ge=1, le=100_000, doc="calls per interval to judge one")
    minimum_hosts: int = option(2, ge=1, le=100, doc="replicas with that volume to judge any")
    interval_s: float = option(1.0, gt=0, le=300, doc="how often the replicas are judged")
    base_ejection_s: float = option(
        5.0, gt=0, le=3600, doc="an ejection lasts this x the replica's ejection count"
    )
    max_ejection_s: float = option(
        30.0, gt=0, le=3600, doc="longest ejection (at least base_ejection_s)"
    )
    max_ejected_percent: float = option(
        50.0, ge=0, le=100, doc="replicas out at once; 50 lets one of two replicas go"
    )

    def __post_init__(self) -> None:
        check(self)
