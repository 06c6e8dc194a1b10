"""Round robin over a dependency's replicas, skipping the ejected and the disconnected.

Not an interceptor of its own: the ResilienceInterceptor (and its `streams()` interceptor)
hands each attempt of a call to `send()` (`open_stream()`) in place of gRPC's continuation, so
a call crosses one interceptor layer and every attempt (each retry included) is picked anew: a
retry after a failure on one replica goes to another. Each replica has its own channel; the
outcome of each attempt (a stream's when it ends) feeds the OutlierDetector. Used when an edge
has several replica addresses and outlier ejection on (or addresses gRPC's `ipv4:` resolver
cannot take); otherwise gRPC's own round_robin balances (grpc_aio_resilience.channel).

The rotation (replicas in, connection not failed) is worked out again only when it can have
changed: an ejection or a return, the detector's next interval, a replica channel's
connectivity (watched, one task per replica channel), a policy swap; not per attempt.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
from collections.abc import Callable, Sequence
from typing import Any

import grpc
import grpc.aio
from google.protobuf import descriptor_pool, message_factory

from grpc_aio_resilience import classify
from grpc_aio_resilience.clock import Clock
from grpc_aio_resilience.events import Event, EventBus, ReplicaEjected, ReplicaReturned
from grpc_aio_resilience.outlier import OutlierDetector
from grpc_aio_resilience.outlier_policy import OutlierPolicy

REPLICA_FAILURES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DATA_LOSS,
    }
)
"""Outcomes that say something about the replica (Envoy's 5xx / gateway failures); an answer
such as NOT_FOUND or a shed RESOURCE_EXHAUSTED does not, nor a call its caller cancelled, nor
an attempt its caller's own deadline ended (grpc_aio_resilience.classify.callers_deadline)."""

Multicallable = Any

_DOWN = frozenset({grpc.ChannelConnectivity.TRANSIENT_FAILURE, grpc.ChannelConnectivity.SHUTDOWN})

_failed_on: contextvars.ContextVar[tuple[Any, str] | None] = contextvars.ContextVar(
    "mesh_replica_failed_on", default=None
)
"""(request, replica) of the last attempt that failed in this task: the retry loop runs every
attempt of a call in one task with the same request object, so its next attempt avoids that
replica, whatever other calls did to the rotation meanwhile."""


def forget_failed_replica() -> None:
    """Forget the replica the last failed attempt went to once its call has ended: a call
    that ran in its caller's task (grpc_aio_resilience.direct) leaves no mark on the caller's
    next calls."""
    if _failed_on.get() is not None:
        _failed_on.set(None)


_spread: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "mesh_replicas_of_call", default=None
)
"""The replicas the attempts of one hedged call went to: the hedging strategy sets a fresh
set in the task that starts them (`spread_attempts`), each attempt's task inherits that same
set, and each attempt avoids the replicas in it while another is in rotation."""


def spread_attempts() -> contextvars.Token[set[str] | None]:
    """From here on (until the token is reset), attempts started from this task, and the tasks
    it starts, each go to a replica the others did not, while there is one."""
    return _spread.set(set())


def end_spread(token: contextvars.Token[set[str] | None]) -> None:
    _spread.reset(token)


def _response_type(method: str) -> Callable[[bytes], Any]:
    """The deserializer of `/pkg.Service/Method`'s response, from the registered descriptors."""
    service, _, name = method.lstrip("/").partition("/")
    found = descriptor_pool.Default().FindMethodByName(f"{service}.{name}")
    return message_factory.GetMessageClass(found.output_type).FromString  # type: ignore[no-any-return]


class ReplicaRouter:
    """Sends each attempt to the next replica in rotation, on that replica's channel."""

    def __init__(
        self,
        dependency: str,
        addresses: Sequence[str],
        make_channel: Callable[[str], grpc.aio.Channel],
        policy: OutlierPolicy,
        bus: EventBus,
        clock: Clock,
        *,
        balanced: bool = False,
    ) -> None:
        self.dependency = dependency
        self.addresses = tuple(addresses)
        self.channels: dict[str, grpc.aio.Channel] = {}
        self._make_channel = make_channel
        self._balanced = balanced
        """The host channel balances over every replica itself (round_robin, `ipv4:`)."""
        self._bus = bus
        self._clock = clock
        self._turn = 0
        self._ring: tuple[str, ...] | None = None
        """The replicas in rotation; None once something it depends on changed."""
        self._ring_until_s = math.inf
        self._callables: dict[tuple[str, Any], Multicallable] = {}
        self._tasks: set[asyncio.Future[None]] = set()
        """Connectivity watchers, and streams' outcomes still to be judged (held so none is
        collected unfinished)."""
        self.attempt_s = math.inf
        """The edge's own attempt timeout (set by its Edge): a unary attempt sent with less ran
        on its caller's deadline, and its end for that deadline says nothing of the replica."""
        self.use(policy)

    def use(self, policy: OutlierPolicy) -> None:
        """Take on `policy` (a policy swap): a fresh detector, no replica ejected."""
        self.policy = policy
        self._ejecting = policy.enabled
        self.routes = self._ejecting or not self._balanced
        """Whether calls go through send()/open_stream(); if not, the host channel's own
        round_robin picks (read at each call's start, so a swap applies to the next call)."""
        self.detector = OutlierDetector(
            self.dependency, self.addresses, policy, self._clock, self._emit
        )
        self._ring = None

    def _emit(self, event: Event) -> None:
        if isinstance(event, ReplicaEjected | ReplicaReturned):
            self._ring = None
        self._bus.emit(event)

    def pick(self, avoid: str | None = None) -> str:
        """The next replica in rotation (not ejected, connection not failed) other than `avoid`
        (where this call's last attempt failed) if another is in; if none is, any."""
        ring = self._ring
        if ring is None or self._clock.now() >= self._ring_until_s:
            ring = self._ring = self._rotation()
        if avoid is not None and len(ring) > 1 and avoid in ring:
            ring = tuple(a for a in ring if a != avoid)
        self._turn += 1
        return ring[self._turn % len(ring)]

    def pick_apart(self, taken: set[str]) -> str:
        """The next replica in rotation outside `taken` (the replicas a hedged call's other
        attempts went to), added to it; if every one in rotation is taken, the next of them."""
        ring = self._ring
        if ring is None or self._clock.now() >= self._ring_until_s:
            ring = self._ring = self._rotation()
        free = tuple(a for a in ring if a not in taken) or ring
        if not taken:  # a call's first attempt moves the rotation on; its hedges do not, or
            self._turn += 1  # with two replicas every first attempt would go to the same one
        address = free[self._turn % len(free)]
        taken.add(address)
        return address

    def _rotation(self) -> tuple[str, ...]:
        if self._ejecting:
            ring: Sequence[str] = self.detector.available()
            self._ring_until_s = self.detector.next_change_s()
        else:
            ring, self._ring_until_s = self.addresses, math.inf
        # Like gRPC's round_robin, skip a replica whose connection failed (a dead process is
        # noticed by its connection long before its failures could eject it).
        connected = tuple(a for a in ring if self._state(a) not in _DOWN)
        return connected or tuple(ring) or self.addresses

    def _channel(self, address: str) -> grpc.aio.Channel:
        found = self.channels.get(address)
        if found is None:
            found = self.channels[address] = self._make_channel(address)
            self._hold(asyncio.ensure_future(self._watch(found)))
        return found

    async def _watch(self, channel: grpc.aio.Channel) -> None:
        """Drops the rotation at each connectivity change of a replica's channel (one since it
        was made included), until the channel is closed."""
        while True:
            self._ring = None
            state = channel.get_state(try_to_connect=False)
            if state is grpc.ChannelConnectivity.SHUTDOWN:
                return
            await channel.wait_for_state_change(state)  # at once if it is no longer `state`

    def _hold(self, task: asyncio.Future[None]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _state(self, address: str) -> grpc.ChannelConnectivity:
        found = self.channels.get(address)
        if found is None:
            return grpc.ChannelConnectivity.IDLE
        return found.get_state(try_to_connect=False)

    def _callable(self, address: str, raw: Any, request: Any, stream: bool) -> Multicallable:
        found = self._callables.get((address, raw))
        if found is None:
            method = raw.decode() if isinstance(raw, bytes) else str(raw)
            channel = self._channel(address)
            opens = channel.unary_stream if stream else channel.unary_unary
            found = self._callables[(address, raw)] = opens(
                method,
                request_serializer=type(request).SerializeToString,
                response_deserializer=_response_type(method),
            )
        return found

    def _start(
        self, details: grpc.aio.ClientCallDetails, request: Any, *, stream: bool
    ) -> tuple[str, Any]:
        """Picks this attempt's replica and starts the call on its channel."""
        taken = _spread.get()
        if taken is not None:
            address = self.pick_apart(taken)
        else:
            failed = _failed_on.get()
            address = self.pick(failed[1] if failed is not None and failed[0] is request else None)
        call = self._callable(address, details.method, request, stream)(
            request,
            timeout=details.timeout,
            metadata=details.metadata,
            credentials=details.credentials,
            wait_for_ready=details.wait_for_ready,
        )
        return address, call

    async def send(self, details: grpc.aio.ClientCallDetails, request: Any) -> Any:
        """One attempt of a unary call on the picked replica (a continuation's shape): the
        replica's call, ended, its outcome recorded."""
        address, call = self._start(details, request, stream=False)
        try:
            await call
        except asyncio.CancelledError:
            call.cancel()
            raise
        except grpc.aio.AioRpcError as err:
            _failed_on.set((request, address))
            if self._ejecting and not self._callers_deadline(details.timeout, err):
                self.detector.record(address, err.code() in REPLICA_FAILURES)
            return call
        if self._ejecting:
            self.detector.record(address, False)
        return call

    def _callers_deadline(self, timeout_s: float | None, err: grpc.aio.AioRpcError) -> bool:
        own_timeout = timeout_s is None or timeout_s >= self.attempt_s
        return classify.callers_deadline(err, own_timeout)

    async def open_stream(self, details: grpc.aio.ClientCallDetails, request: Any) -> Any:
        """One attempt of a server stream on the picked replica (a continuation's shape): the
        replica's own call, as it is, for the stream layer above to read
        (grpc_aio_resilience.streaming)."""
        address, call = self._start(details, request, stream=True)
        # A stream's attempt is retried only when it failed before its first message (or sent
        # none in time), and its attempts run in one task: the next attempt of this request in
        # this task is a retry, and avoids this replica.
        _failed_on.set((request, address))
        if self._ejecting:
            self._hold(asyncio.ensure_future(self._judge(address, call)))
        return call

    async def _judge(self, address: str, call: Any) -> None:
        """Feeds the detector with how a stream ended, before or after its messages; not when
        it was cancelled (its caller went away, or gave up waiting for its first message)."""
        code = await call.code()
        if code is not grpc.StatusCode.CANCELLED and self._ejecting:
            self.detector.record(address, code in REPLICA_FAILURES)

    async def close(self) -> None:
        for channel in list(self.channels.values()):
            await channel.close()
        for task in list(self._tasks):
            task.cancel()
