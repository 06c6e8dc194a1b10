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

from dataclasses import dataclass

from grpc_aio_resilience.options import (
    OptionError,
    at_most,
    check,
    code_name,
    code_names,
    option,
    quote,
)
from grpc_aio_resilience.outlier_policy import OutlierPolicy

XDS_RETRYABLE = ("CANCELLED", "DEADLINE_EXCEEDED", "INTERNAL", "RESOURCE_EXHAUSTED", "UNAVAILABLE")
"""The codes A44's retry_on can name; gRPC ignores any other value."""


@dataclass(frozen=True, slots=True)
class XdsRetryPolicy:
    """A44's route retry_policy: attempts in all, exponential backoff, the codes retried."""

    max_attempts: int = option(3, ge=2, le=5, doc="gRPC caps it at 5")
    base_backoff_s: float = option(0.025, ge=0.001, le=60, doc="first backoff")
    max_backoff_s: float = option(0.25, ge=0.001, le=60, doc="largest backoff")
    retryable_codes: tuple[str, ...] = option(
        ("UNAVAILABLE",), min_length=1, max_length=5, doc="gRPC code names xDS retries (A44)"
    )

    def __post_init__(self) -> None:
        check(self)
        code_names(self, "retryable_codes", XDS_RETRYABLE)
        at_most(self, "base_backoff_s", "max_backoff_s")


@dataclass(frozen=True, slots=True)
class XdsFaultPolicy:
    """One A33 fault: on every call of the edge, or on one method's calls only."""

    method: str | None = option(None, doc="a method name, e.g. Recommend; null: every call")
    abort_percent: float = option(0.0, ge=0, le=100, doc="calls aborted")
    abort_code: str = option("UNAVAILABLE", doc="the aborted calls' gRPC code")
    delay_percent: float = option(0.0, ge=0, le=100, doc="calls delayed")
    delay_s: float = option(0.0, ge=0, le=600, doc="the delay")

    def __post_init__(self) -> None:
        check(self)
        object.__setattr__(self, "abort_code", code_name("abort_code", self.abort_code))
        if self.method is not None and not self.method.isidentifier():
            raise OptionError("method", f"{quote(self.method)} is not a method name")


@dataclass(frozen=True, slots=True)
class XdsPolicy:
    """The edge's xDS resources' policy part; every part is off unless set."""

    retry: XdsRetryPolicy | None = option(None, doc="A44 retries; null: none")
    max_requests: int | None = option(None, ge=1, le=100_000, doc="A32, calls in flight")
    outlier: OutlierPolicy | None = option(
        None, doc="A50: its failure-percentage fields (consecutive_failures has no A50 field)"
    )
    timeout_s: float | None = option(None, gt=0, le=3600, doc="A31: max_stream_duration")
    faults: tuple[XdsFaultPolicy, ...] = option((), max_length=16, doc="A33 faults")

    def __post_init__(self) -> None:
        check(self)
        methods = [f.method for f in self.faults]
        if len(set(methods)) != len(methods):
            raise OptionError("faults", "one per method, and one for every call (method unset)")
