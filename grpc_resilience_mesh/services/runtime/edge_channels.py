"""The channels of a service's edges at their end: closing one (its replicas' channels with it), and
the retirement of a channel a policy swap replaced (grpc_resilience_mesh.services.runtime.edges): it
keeps the calls already on it, retries included, until they end (at most the service's shutdown
grace), then closes.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc.aio

from grpc_aio_resilience import replica_router


def _calls_in_flight(channel: grpc.aio.Channel) -> list[Any]:
    # grpc.aio tracks each call made on the channel (its own close(grace) waits on them), but
    # close() refuses new attempts at once, which would fail the retries of calls in flight;
    # so the drain waits on the same set first and closes only after.
    calls = getattr(channel, "_active_calls", None)
    return [] if calls is None else [c for c in list(calls) if not c.done()]


async def close_edge_channel(channel: grpc.aio.Channel) -> None:
    """Close an edge's channel and its replicas' own channels, if it has any."""
    router = replica_router(channel)
    if router is not None:
        await router.close()
    await channel.close()


async def _drained(channel: grpc.aio.Channel, grace_s: float) -> None:
    """Return when every call now on `channel` has ended, or after `grace_s`."""
    calls = _calls_in_flight(channel)
    if not calls:
        return
    ended = asyncio.Event()
    left = len(calls)

    def one_ended(_: object) -> None:
        nonlocal left
        left -= 1
        if left == 0:
            ended.set()

    for call in calls:  # no await since the snapshot: none ended unseen
        call.add_done_callback(one_ended)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(ended.wait(), grace_s)


async def drain_and_close(channel: grpc.aio.Channel, grace_s: float) -> None:
    """Close `channel` once no call is left on it, or after `grace_s` (what is left then is
    cancelled, as at shutdown)."""
    try:
        await _drained(channel, grace_s)
    finally:
        await close_edge_channel(channel)


class Retirements:
    """Channels draining after a swap; the service's stop closes whatever is still draining."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def retire(self, channel: grpc.aio.Channel, grace_s: float) -> None:
        task = asyncio.get_running_loop().create_task(drain_and_close(channel, grace_s))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def __len__(self) -> int:
        return len(self._tasks)

    async def close(self) -> None:
        """Stop every drain now (each still closes its channel)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
