"""The per-call state strategies share, and the shape of a strategy."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import grpc.aio

from grpc_aio_resilience.criticality import Criticality

Continuation = Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]]
Start = Callable[[grpc.aio.ClientCallDetails, Any], Any]
"""Starts an attempt and returns its call object at once: a continuation without a coroutine."""


@dataclass(slots=True)
class CallContext:
    """One logical call as it moves through the pipeline; attempt fields change per attempt."""

    dependency: str
    method: str
    request: Any
    details: grpc.aio.ClientCallDetails
    continuation: Continuation
    deadline_s: float = math.inf
    """Absolute monotonic deadline: min(caller's timeout, inbound deadline, own total budget)."""
    attempt: int = 1
    attempt_timeout_s: float = math.inf
    own_timeout: bool = True
    """True when this attempt's deadline is its own attempt timeout, not the call's deadline:
    only then is DEADLINE_EXCEEDED a transient failure worth retrying and counting."""
    attempt_metadata: grpc.aio.Metadata | None = None
    sent: int = 0
    """Attempts handed to the wire: 0 means the dependency cannot have seen this call."""
    criticality: Criticality | None = None
    """The criticality the current attempt carries (set by the attempt hook; None: none)."""
    hedged: bool = False
    """An attempt of a hedged call (grpc_aio_resilience.hedging): the retry strategy inside lets it
    through untouched, as a method hedges or retries, never both (gRFC A6)."""
    start: Start | None = None
    """What `continuation` awaits, when it is that alone (grpc_aio_resilience.direct's plain
    multicallable): the fused run calls it and skips a coroutine per attempt. None: await
    `continuation`."""


Next = Callable[[CallContext], Awaitable[Any]]


class Strategy(Protocol):
    """One layer of a pipeline: does its work around `inner`, returns the final call object."""

    name: ClassVar[str]

    def execute(self, ctx: CallContext, inner: Next) -> Awaitable[Any]:
        """An awaitable of the final call object: a coroutine of the strategy's own, or, when
        it has nothing to do around this call, `inner(ctx)` itself (one layer fewer)."""
        ...
