"""The one way a servicer refuses a call: `abort`, and `checked_fields` around validation."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from grpc_resilience_mesh.services.contracts.fields import (
    check_limit,
    check_user_id,
    checked_fields,
)
from grpc_resilience_mesh.services.runtime.refusal import abort


class Aborted(Exception):
    """What grpc.aio's context.abort raises (AbortError), for a fake context."""


class FakeContext:
    def __init__(self) -> None:
        self.aborted: tuple[Any, ...] | None = None

    def time_remaining(self) -> float | None:
        return None  # no deadline

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    async def abort(self, code: grpc.StatusCode, details: str, trailers: Any = ()) -> None:
        self.aborted = (code, details, trailers)
        raise Aborted


async def test_a_field_error_ends_the_call_with_invalid_argument_naming_the_field() -> None:
    context = FakeContext()
    with pytest.raises(Aborted):
        async with checked_fields(context):
            check_user_id("u-0001")
            check_limit(99)
    assert context.aborted == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "limit: 99 is outside 1..50 (0 means 10)",
        (),
    )


async def test_valid_fields_pass_and_other_errors_are_not_swallowed() -> None:
    context = FakeContext()
    async with checked_fields(context):
        user_id = check_user_id("u-0001")
    assert user_id == "u-0001"
    with pytest.raises(KeyError):
        async with checked_fields(context):
            raise KeyError("x")
    assert context.aborted is None


async def test_abort_passes_code_details_and_trailers() -> None:
    context = FakeContext()
    with pytest.raises(Aborted):
        await abort(context, grpc.StatusCode.NOT_FOUND, "nope", [("k", "v")])
    assert context.aborted == (grpc.StatusCode.NOT_FOUND, "nope", (("k", "v"),))
