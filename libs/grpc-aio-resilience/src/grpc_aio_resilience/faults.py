"""Application-level faults on a server: rules a chaos run sets at runtime (`FaultTable`) and the
server layer that applies them (`FaultLayer`); `fault_admin.py` serves the table over gRPC.

    table = FaultTable()
    server = protect_server(grpc.aio.server(), [*server_interceptors("kv"), FaultLayer(table)])

The layer goes innermost, after the library's three: an injected delay or failure then looks
like a slow or failing handler to every layer outside it. Admission counts a delayed call as in
flight (its limit adapts as it would to a slow handler), the inbound layer counts the failure,
and the stream guard still bounds a stream. Outermost, a fault would hide from the server's own
protection, so a run could not show how that protection reacts; faults between services (lost
packets, a slow link) are a proxy's job, not this layer's.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience.clock import Clock, SystemClock
from grpc_aio_resilience.errors import InjectedFaultError
from grpc_aio_resilience.events import EventBus, FaultInjected
from grpc_aio_resilience.options import OptionError, check, code_name, option, quote
from grpc_aio_resilience.server_layer import EXEMPT_PREFIXES, ServerLayer, abort_with
from grpc_aio_resilience.streaming_server import responses

FAULT_ADMIN_PREFIX = "/grpc_aio_resilience.FaultAdmin/"
"""The fault admin's methods: never faulted, so a rule on "*" cannot stop its own removal."""
MAX_RULES = 64
"""Rules a table holds at most: each call is matched against them in order."""
MAX_DELAY_MS = 600_000
"""Longest injected delay: ten minutes, past any deadline worth testing."""


@dataclass(frozen=True, slots=True)
class FaultRule:
    """One fault: which calls it matches, the share of them it hits, and what a hit call gets
    (a delay, then a failure with `code`; a rule without a code only delays)."""

    method: str = option("*", doc='"/pkg.Service/Method" or "*" (every method)')
    code: str | None = option(None, doc="gRPC code a hit call fails with; null: it is served")
    delay_ms: int = option(0, ge=0, le=MAX_DELAY_MS, doc="a hit call waits this long first")
    rate: float = option(1.0, ge=0, le=1, doc="share of matching calls hit, drawn per call")
    header: dict[str, str] = option(
        factory=dict, doc="metadata a call must carry to match (all of it, exact values)"
    )

    def __post_init__(self) -> None:
        check(self)
        object.__setattr__(self, "method", _method_name(self.method))
        if self.code is not None:
            object.__setattr__(self, "code", code_name("code", self.code))
        elif self.delay_ms == 0:
            raise OptionError("code", "a rule with neither a code nor a delay_ms does nothing")
        object.__setattr__(self, "header", _header(self.header))

    def matches(self, method: str, metadata: Iterable[tuple[str, Any]] | None) -> bool:
        """Whether a call of `method` with `metadata` is one this rule may hit."""
        if self.method != "*" and self.method != method:
            return False
        header = self.header
        if not header:
            return True
        matched: set[str] = set()
        for key, value in metadata or ():
            if header.get(key) == value:
                matched.add(key)
        return len(matched) == len(header)


def _method_name(method: str) -> str:
    """A full method name with its leading slash ("pkg.Svc/M" is taken as "/pkg.Svc/M")."""
    if method == "*":
        return method
    full = method if method.startswith("/") else f"/{method}"
    service, _, name = full[1:].partition("/")
    bad = len(full) > 256 or any(c.isspace() for c in full)
    if bad or not service or not name or "/" in name:
        raise OptionError("method", f'{quote(method)} is not "*" nor "/pkg.Service/Method"')
    return full


def _header(header: Any) -> dict[str, str]:
    if not isinstance(header, Mapping):
        raise OptionError("header", f"{quote(header)} is not a mapping of metadata keys to values")
    if len(header) > 16:
        raise OptionError("header", "takes at most 16 entries")
    entries: dict[str, str] = {}
    for key, value in header.items():
        if not isinstance(key, str) or not key or key.lower().startswith("grpc-"):
            raise OptionError("header", f"{quote(key)} is not a metadata key a call may send")
        if not isinstance(value, str):
            raise OptionError(f"header.{key}", f"{quote(value)} is not text")
        entries[key.lower()] = value  # gRPC sends metadata keys in lower case
    return entries


class FaultTable:
    """The rules in force, first match wins. `set` swaps the whole tuple, so a call being
    matched never sees half an edit (all edits run on the event loop's thread, or are one
    reference assignment when they do not)."""

    __slots__ = ("rules",)

    def __init__(self, rules: Sequence[FaultRule] = ()) -> None:
        self.rules: tuple[FaultRule, ...] = ()
        self.set(rules)

    def set(self, rules: Sequence[FaultRule]) -> None:
        """Replaces every rule with `rules`, in order (at most MAX_RULES)."""
        if len(rules) > MAX_RULES:
            raise OptionError("rules", f"takes at most {MAX_RULES} rules, got {len(rules)}")
        self.rules = tuple(rules)

    def clear(self) -> None:
        self.rules = ()

    def list(self) -> list[FaultRule]:
        return list(self.rules)

    def match(self, method: str, metadata: Iterable[tuple[str, Any]] | None) -> FaultRule | None:
        """The first rule that matches a call, or None."""
        for rule in self.rules:
            if rule.matches(method, metadata):
                return rule
        return None


class FaultLayer(ServerLayer):
    """Delays and fails calls as `table` says, deciding per call; while the table is empty a
    call costs one attribute read and the handler is served as it is."""

    def __init__(
        self,
        table: FaultTable,
        service: str = "",
        bus: EventBus | None = None,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        exempt: Iterable[str] = (*EXEMPT_PREFIXES, FAULT_ADMIN_PREFIX),
    ) -> None:
        self._table = table
        self._service = service
        self._bus = bus
        self._clock = clock or SystemClock()
        self._random = (rng or random.Random()).random
        self._exempt = tuple(exempt)

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        if not self._table.rules or handler is None:
            return handler
        method = handler_call_details.method
        if method.startswith(self._exempt):
            return handler
        rule = self._table.match(method, handler_call_details.invocation_metadata)
        if rule is None or (rule.rate < 1.0 and self._random() >= rule.rate):
            return handler
        return self._faulted(handler, method, rule)

    def _faulted(
        self, handler: grpc.RpcMethodHandler, method: str, rule: FaultRule
    ) -> grpc.RpcMethodHandler:
        if handler.unary_unary is not None:
            return handler._replace(unary_unary=self._unary(handler.unary_unary, method, rule))
        if handler.stream_unary is not None:
            return handler._replace(stream_unary=self._unary(handler.stream_unary, method, rule))
        if handler.unary_stream is not None:
            return handler._replace(unary_stream=self._stream(handler.unary_stream, method, rule))
        return handler._replace(stream_stream=self._stream(handler.stream_stream, method, rule))

    async def _strike(
        self, context: grpc.aio.ServicerContext, method: str, rule: FaultRule
    ) -> None:
        """The hit: the delay, the event, then the failure (when the rule has a code)."""
        delay_s = rule.delay_ms / 1000.0
        if delay_s > 0.0:
            await self._clock.sleep(delay_s)
        if self._bus is not None:
            self._bus.emit(FaultInjected(self._service, method, rule.code or "OK", delay_s))
        if rule.code is not None:
            code = grpc.StatusCode[rule.code]
            await abort_with(context, InjectedFaultError(method, code, None))

    def _unary(self, inner: Any, method: str, rule: FaultRule) -> Any:
        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await self._strike(context, method, rule)
            return await inner(request, context)

        return behaviour

    def _stream(self, inner: Any, method: str, rule: FaultRule) -> Any:
        """A stream is hit before its first message: delayed, or failed with none sent."""

        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            await self._strike(context, method, rule)
            async with aclosing(responses(inner, request, context)) as messages:
                async for message in messages:
                    yield message

        return behaviour
