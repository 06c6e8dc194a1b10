"""Client-side adaptive throttling's settings (an edge policy's `throttle:` section).

Google SRE, "Handling Overload": over the last `window_s` an edge counts `requests` (attempts
it wanted to send, its own rejections included) and `accepts` (attempts the backend did not
refuse for overload), and rejects an attempt locally with probability
max(0, (requests - k * accepts) / (requests + 1)).
"""

from __future__ import annotations

from dataclasses import dataclass

from grpc_aio_resilience.options import check, option


@dataclass(frozen=True, slots=True)
class ThrottlePolicy:
    """When an edge stops sending attempts its backend would refuse anyway."""

    enabled: bool = option(False, doc="off: every attempt is sent")
    k: float = option(
        2.0,
        ge=1,
        le=10,
        doc="attempts sent per accepted one before local rejection starts; "
        "2 (SRE's) lets at most 1 refusal reach the backend per accept",
    )
    window_s: float = option(10.0, ge=1, le=600, doc="the sliding window of the counts")
    min_requests: int = option(
        10, ge=0, le=10_000, doc="no local rejection while the window holds fewer requests"
    )

    def __post_init__(self) -> None:
        check(self)
