"""Client-side adaptive throttling's settings (an edge policy's `throttle:` section).

Google SRE, "Handling Overload": over the last `window_s` an edge counts `requests` (attempts
it wanted to send, its own rejections included) and `accepts` (attempts the backend did not
refuse for overload), and rejects an attempt locally with probability
max(0, (requests - k * accepts) / (requests + 1)).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ThrottlePolicy(BaseModel):
    """When an edge stops sending attempts its backend would refuse anyway."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    enabled: bool = False
    k: float = Field(
        default=2.0,
        ge=1,
        le=10,
        description="[1, 10]: attempts sent per accepted one before local rejection starts; "
        "2 (SRE's) lets at most 1 refusal reach the backend per accept",
    )
    window_s: float = Field(
        default=10.0, ge=1, le=600, description="[1, 600]: the sliding window of the counts"
    )
    min_requests: int = Field(
        default=10,
        ge=0,
        le=10_000,
        description="[0, 10000]: no local rejection while the window holds fewer requests",
    )
