"""Our errors are grpc.aio.AioRpcError with the right codes and pushback trailers."""

from __future__ import annotations

import grpc
import grpc.aio
import pytest

from grpc_aio_resilience.errors import (
    BreakerOpenError,
    BulkheadFullError,
    DeadlineBudgetExhaustedError,
    InjectedFaultError,
    ResilienceError,
    ShedError,
)


@pytest.mark.parametrize(
    ("error", "code", "pushback"),
    [
        (BreakerOpenError("dep", "/m", 1.25), grpc.StatusCode.UNAVAILABLE, "1250"),
        (BreakerOpenError("dep", "/m", 0.0002), grpc.StatusCode.UNAVAILABLE, "1"),  # never 0
        (BulkheadFullError("dep", 4), grpc.StatusCode.RESOURCE_EXHAUSTED, None),
        (
            DeadlineBudgetExhaustedError("dep", "/m", "backoff"),
            grpc.StatusCode.DEADLINE_EXCEEDED,
            None,
        ),
        (ShedError("svc", 4, 0.2), grpc.StatusCode.RESOURCE_EXHAUSTED, "200"),
        (InjectedFaultError("/m", grpc.StatusCode.INTERNAL, None), grpc.StatusCode.INTERNAL, None),
    ],
)
def test_one_except_clause_handles_them_all(
    error: ResilienceError, code: grpc.StatusCode, pushback: str | None
) -> None:
    try:
        raise error
    except grpc.aio.AioRpcError as err:
        assert err.code() is code
        assert err.details()
        assert dict(err.trailing_metadata()).get("grpc-retry-pushback-ms") == pushback
        assert isinstance(err.initial_metadata(), grpc.aio.Metadata)
