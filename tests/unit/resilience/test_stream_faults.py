"""The fault fields streams need: `after_messages` and `first_attempt_only`, read from
MESH_FAULTS and FaultAdmin values, and which attempts count as retries."""

from __future__ import annotations

import contextlib
from collections import namedtuple
from typing import Any

import grpc
import pytest

from grpc_aio_resilience.events import EventBus
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.faults.injection import (
    FaultInterceptor,
    FaultSpec,
    FaultTable,
    FaultValidationError,
)

STREAM = "/mesh.v1.RecommendationService/StreamRecommend"
Details = namedtuple("Details", "method invocation_metadata")


def test_mesh_faults_reads_the_stream_fields() -> None:
    table = FaultTable.from_env(
        {
            "MESH_FAULTS": f'[{{"method": "{STREAM}", "error_rate": 1, "after_messages": 3,'
            ' "first_attempt_only": true}]'
        }
    )
    spec = table.lookup(STREAM)
    assert spec is not None and spec.after_messages == 3 and spec.first_attempt_only


@pytest.mark.parametrize(
    ("item", "words"),
    [
        ('{"method": "*", "after_messages": -1}', "after_messages: must be within 0.."),
        ('{"method": "*", "after_messages": 2000000}', "after_messages: must be within 0.."),
        ('{"method": "*", "after_messages": "3"}', "after_messages: must be an integer"),
        ('{"method": "*", "first_attempt_only": "yes"}', "first_attempt_only: must be true or"),
        ('{"method": "*", "first_attempt_only": 1}', "first_attempt_only: must be true or"),
    ],
)
def test_bad_stream_fields_are_refused_naming_the_field(item: str, words: str) -> None:
    with pytest.raises(ConfigError) as refused:
        FaultTable.from_env({"MESH_FAULTS": f"[{item}]"})
    assert words in str(refused.value)


def test_fault_admin_values_are_checked_the_same_way() -> None:
    with pytest.raises(FaultValidationError) as refused:
        FaultSpec.parse(STREAM, 1.0, "UNAVAILABLE", 0.0, -1, -5, False)
    assert refused.value.field == "after_messages"


def handler() -> grpc.RpcMethodHandler:
    async def stream(request: Any, context: Any) -> Any:
        yield request

    return grpc.unary_stream_rpc_method_handler(stream)


@pytest.mark.parametrize(
    ("metadata", "faulted"),
    [
        ((), True),
        ((("grpc-previous-rpc-attempts", "0"),), True),
        ((("grpc-previous-rpc-attempts", "1"),), False),
        ((("grpc-previous-rpc-attempts", "02"),), False),
        ((("grpc-previous-rpc-attempts", "\u0663"),), True),  # not an ASCII number: no retry
        ((("grpc-previous-rpc-attempts", "x"),), True),
    ],
)
async def test_first_attempt_only_spares_what_grpc_previous_rpc_attempts_marks_a_retry(
    metadata: tuple[tuple[str, str], ...], faulted: bool
) -> None:
    faults = FaultTable([FaultSpec.parse(STREAM, 1.0, "UNAVAILABLE", 0.0, -1, 0, True)])
    interceptor = FaultInterceptor("recommendation", faults, EventBus())
    original = handler()

    async def lookup(details: Any) -> grpc.RpcMethodHandler:
        return original

    found = await interceptor.intercept_service(lookup, Details(STREAM, metadata))
    assert found is not None and found.unary_stream is not None  # a stream handler either way
    context = _Context(metadata)
    sent: list[Any] = []
    with contextlib.suppress(_Aborted):
        async for message in found.unary_stream("m", context):
            sent.append(message)
    assert (context.aborted is grpc.StatusCode.UNAVAILABLE) is faulted
    assert sent == ([] if faulted else ["m"])  # a faulted stream fails after 0 messages


class _Aborted(Exception):
    """What the fake context's abort raises, as grpc.aio's ends the call."""


class _Context:
    """A served stream's context: the call's metadata, no deadline, an abort that ends it."""

    def __init__(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self._metadata = metadata
        self.aborted: grpc.StatusCode | None = None

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def time_remaining(self) -> float | None:
        return None

    async def abort(self, code: grpc.StatusCode, details: str, trailers: Any = ()) -> None:
        self.aborted = code
        raise _Aborted(details)
