"""Gateway.StreamRecommendations: recommendation's ranked stream passed on item by item.

The channel's stream interceptor (grpc_aio_resilience.streaming) retries the stream only until its
first item arrives. A failure after that reaches this relay as the stream's end: the items
already sent stand, and the caller gets the error with the trailers below, so it can tell a
partial answer from none. There is no fallback: popular items spliced after personalised ones
would be a different answer, not the rest of this one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import grpc
import grpc.aio

from grpc_resilience_mesh.services.v1 import recommendation_pb2, recommendation_pb2_grpc

PARTIAL_KEY = "mesh-stream-partial"
"""Trailer on a failed stream: "true" when items had been sent before the failure."""
MESSAGES_KEY = "mesh-stream-messages"
"""Trailer on a failed stream: how many items were sent before it (0: nothing arrived)."""

Relay = Callable[[grpc.aio.AioRpcError, Sequence[tuple[str, str]]], Awaitable[None]]


def stream_trailers(sent: int) -> tuple[tuple[str, str], ...]:
    return ((PARTIAL_KEY, "true" if sent else "false"), (MESSAGES_KEY, str(sent)))


async def relay_stream(
    stub: recommendation_pb2_grpc.RecommendationServiceStub,
    user_id: str,
    limit: int,
    relay: Relay,
) -> AsyncIterator[recommendation_pb2.RankedProduct]:
    """Yields recommendation's items as they come; on a failure, `relay` ends the call with it
    and the partial flag. Cancelling this (the caller went away) cancels the stream below."""
    call = stub.StreamRecommend(recommendation_pb2.RecommendRequest(user_id=user_id, limit=limit))
    sent = 0
    try:
        async for item in call:
            yield item
            sent += 1
    except grpc.aio.AioRpcError as err:
        await relay(err, stream_trailers(sent))
    finally:
        call.cancel()
