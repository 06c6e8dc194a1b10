"""Outlier ejection's settings (an edge policy's `outlier:` section), after gRFC A50 and Envoy.

A50's `failure_percentage_ejection` (per interval: a replica with at least `request_volume`
calls whose failures reach `failure_percentage` is ejected, when at least `minimum_hosts`
replicas had that volume) plus Envoy's `consecutive_5xx` (`consecutive_failures` in a row
eject at once). An ejection lasts `base_ejection_s` times the replica's ejection count, at most
max(base_ejection_s, max_ejection_s); the count falls by one per interval the replica spends
in rotation. At most `max_ejected_percent` of the replicas are out at once.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class OutlierPolicy(BaseModel):
    """When a replica of a dependency is taken out of rotation, and for how long."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    enabled: bool = False
    consecutive_failures: int = Field(
        default=5, ge=1, le=1000, description="[1, 1000]: Envoy's consecutive_5xx"
    )
    failure_percentage: float = Field(
        default=50.0, gt=0, le=100, description="(0, 100]: A50's failure_percentage threshold"
    )
    request_volume: int = Field(
        default=10, ge=1, le=100_000, description="[1, 100000]: calls per interval to judge one"
    )
    minimum_hosts: int = Field(
        default=2, ge=1, le=100, description="[1, 100]: replicas with that volume to judge any"
    )
    interval_s: float = Field(default=1.0, gt=0, le=300, description="(0, 300]")
    base_ejection_s: float = Field(default=5.0, gt=0, le=3600, description="(0, 3600]")
    max_ejection_s: float = Field(default=30.0, gt=0, le=3600, description="(0, 3600]")
    max_ejected_percent: float = Field(
        default=50.0, ge=0, le=100, description="[0, 100]: 50 lets one of two replicas go"
    )
