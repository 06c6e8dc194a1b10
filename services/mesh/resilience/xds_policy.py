"""What an edge asks of gRPC's own xDS client (an edge policy's `xds:` section), under
`mesh up --xds`, where the caller's channel to the dependency is an `xds:///` target.

Only the part of our policy xDS can say: retry with backoff (gRFC A44), `max_requests` (A32),
outlier ejection by failure percentage (A50), a timeout as the route's max_stream_duration
(A31) and fault injection by delay and abort (A33). The control plane (tools/xds-control,
mesh-xds) sends it; the interceptor's own strategies keep running beside it unless the policy
turns them off, and the one-retry-owner rule holds across both (EdgePolicy's validator).
Without `--xds` this section is not used.
"""

from __future__ import annotations

import grpc
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mesh import safe_yaml
from mesh.resilience.outlier_policy import OutlierPolicy

XDS_RETRYABLE = ("CANCELLED", "DEADLINE_EXCEEDED", "INTERNAL", "RESOURCE_EXHAUSTED", "UNAVAILABLE")
"""The codes A44's retry_on can name; gRPC ignores any other value."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _code_name(name: str, allowed: tuple[str, ...] | None = None) -> str:
    upper = name.upper()
    if upper not in grpc.StatusCode.__members__ or upper == "OK":
        raise ValueError(f"{safe_yaml.short(name)!r} is not a gRPC error code name")
    if allowed is not None and upper not in allowed:
        raise ValueError(f"{upper}: xDS retry (gRFC A44) retries only {', '.join(allowed)}")
    return upper


class XdsRetryPolicy(_Model):
    """A44's route retry_policy: attempts in all, exponential backoff, the codes retried."""

    max_attempts: int = Field(default=3, ge=2, le=5, description="[2, 5]: gRPC caps it at 5")
    base_backoff_s: float = Field(default=0.025, ge=0.001, le=60, description="[0.001, 60]")
    max_backoff_s: float = Field(default=0.25, ge=0.001, le=60, description="[0.001, 60]")
    retryable_codes: list[str] = Field(default=["UNAVAILABLE"], min_length=1, max_length=5)

    @field_validator("retryable_codes")
    @classmethod
    def _retryable(cls, codes: list[str]) -> list[str]:
        return [_code_name(c, XDS_RETRYABLE) for c in codes]

    @model_validator(mode="after")
    def _ordered(self) -> XdsRetryPolicy:
        if self.base_backoff_s > self.max_backoff_s:
            raise ValueError(
                f"base_backoff_s ({self.base_backoff_s}) must be <= max_backoff_s "
                f"({self.max_backoff_s})"
            )
        return self


class XdsFaultPolicy(_Model):
    """One A33 fault: on every call of the edge, or on one method's calls only."""

    method: str | None = Field(default=None, description="a method name, e.g. Recommend")
    abort_percent: float = Field(default=0.0, ge=0, le=100, description="[0, 100]")
    abort_code: str = "UNAVAILABLE"
    delay_percent: float = Field(default=0.0, ge=0, le=100, description="[0, 100]")
    delay_s: float = Field(default=0.0, ge=0, le=600, description="[0, 600]")

    @field_validator("abort_code")
    @classmethod
    def _code(cls, code: str) -> str:
        return _code_name(code)

    @field_validator("method")
    @classmethod
    def _method(cls, method: str | None) -> str | None:
        if method is not None and not method.isidentifier():
            raise ValueError(f"{safe_yaml.short(method)!r} is not a method name")
        return method


class XdsPolicy(_Model):
    """The edge's xDS resources' policy part; every part is off unless set."""

    retry: XdsRetryPolicy | None = None
    max_requests: int | None = Field(
        default=None, ge=1, le=100_000, description="[1, 100000]: A32, calls in flight"
    )
    outlier: OutlierPolicy | None = Field(
        default=None,
        description="A50: its failure-percentage fields (consecutive_failures has no A50 field)",
    )
    timeout_s: float | None = Field(default=None, gt=0, le=3600, description="(0, 3600]: A31")
    faults: list[XdsFaultPolicy] = Field(default_factory=list, max_length=16)

    @model_validator(mode="after")
    def _one_fault_per_route(self) -> XdsPolicy:
        methods = [f.method for f in self.faults]
        if len(set(methods)) != len(methods):
            raise ValueError("faults: one per method, and one for every call (method unset)")
        return self
