"""The fate layer counts a refused call before its status goes out: grpc.aio's abort sends the
status first and raises after, so a count taken on the way out would miss a caller that reads
the metrics as soon as it has the answer (test_fates_wire once saw 2 of 3 calls counted)."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import grpc
import pytest

from grpc_aio_resilience import fates
from grpc_aio_resilience.events import EventBus, RetryScheduled
from grpc_resilience_mesh.services.runtime.bearer import rejection
from grpc_resilience_mesh.services.telemetry.fate_layer import FateLayer
from tests.unit.mesh.test_refusals import Aborted, FakeContext

Details = namedtuple("Details", "method invocation_metadata")
GET_HOME = "/mesh.v1.Gateway/GetHome"


class Context(FakeContext):
    """A servicer context whose abort notes what had been counted when the status was sent."""

    def __init__(self, counted: list[tuple[str, str]]) -> None:
        super().__init__()
        self._counted = counted
        self.counted_at_send: list[tuple[str, str]] | None = None
        self.trailers: tuple[tuple[str, str], ...] = ()

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return self.trailers

    def set_trailing_metadata(self, trailers: tuple[tuple[str, str], ...]) -> None:
        self.trailers = trailers

    def code(self) -> None:
        return None

    async def abort(self, code: grpc.StatusCode, details: str, trailers: Any = ()) -> None:
        self.counted_at_send = list(self._counted)
        self.trailers = tuple(trailers)
        await super().abort(code, details, trailers)


def layer(counted: list[tuple[str, str]]) -> FateLayer:
    return FateLayer("gateway", EventBus(), lambda method, fate: counted.append((method, fate)))


async def test_a_refusal_is_counted_before_its_status_is_sent() -> None:
    counted: list[tuple[str, str]] = []
    refuse = rejection(grpc.StatusCode.RESOURCE_EXHAUSTED, "rate limit", shed_by="rate-limit")
    handler = layer(counted).wrap(refuse, Details(GET_HOME, ()))
    assert handler is not None
    context = Context(counted)
    with pytest.raises(Aborted):
        await handler.unary_unary(b"", context)
    assert context.counted_at_send == [(GET_HOME, "shed(gateway:rate-limit)")]
    assert counted == [(GET_HOME, "shed(gateway:rate-limit)")], "counted once, not again"
    assert ("resilience-fate", "shed(gateway:rate-limit)") in context.trailers


async def test_a_plain_ok_answer_is_counted_once_and_carries_no_fate() -> None:
    """An OK status without a fate trailer reads `ok` (fates.seen_by_caller): the trailer
    would say nothing, and one metadata entry costs grpc CPU on every call."""
    counted: list[tuple[str, str]] = []

    async def answer(request: bytes, context: Any) -> bytes:
        return b"reply"

    handler = layer(counted).wrap(
        grpc.unary_unary_rpc_method_handler(answer), Details(GET_HOME, ())
    )
    assert handler is not None
    context = Context(counted)
    assert await handler.unary_unary(b"", context) == b"reply"
    assert counted == [(GET_HOME, "ok")]
    assert context.trailing_metadata() == ()
    assert fates.seen_by_caller("OK", context.trailing_metadata(), "") == "ok"


async def test_an_answer_after_a_retry_carries_its_fate() -> None:
    counted: list[tuple[str, str]] = []
    bus = EventBus()
    fates_layer = FateLayer("gateway", bus, lambda method, fate: counted.append((method, fate)))

    async def answer(request: bytes, context: Any) -> bytes:
        bus.emit(RetryScheduled("profile", "/x/Get", 1, "UNAVAILABLE", 0.01, None))
        context.set_trailing_metadata((("served-by", "a"),))
        return b"reply"

    handler = fates_layer.wrap(grpc.unary_unary_rpc_method_handler(answer), Details(GET_HOME, ()))
    assert handler is not None
    context = Context(counted)
    assert await handler.unary_unary(b"", context) == b"reply"
    assert counted == [(GET_HOME, "ok-after-retry(1)")]
    assert tuple(context.trailing_metadata()) == (
        ("served-by", "a"),
        ("resilience-fate", "ok-after-retry(1)"),
    )


def test_a_fate_is_settled_and_counted_once() -> None:
    counted: list[str] = []
    facts = fates.FateFacts("gateway", counted.append)
    assert facts.settle("shed(gateway:rate-limit)") == "shed(gateway:rate-limit)"
    assert facts.settle("failed-deadline") == "shed(gateway:rate-limit)"
    assert counted == ["shed(gateway:rate-limit)"]
