"""Reading Gateway.StreamRecommendations as a caller does: the items in the order they came, and,
when the stream failed, its status and whether the gateway flagged it partial (the
`mesh-stream-partial` / `mesh-stream-messages` trailers,
grpc_resilience_mesh.services.gateway.streams)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio

from grpc_resilience_mesh.services.gateway.streams import MESSAGES_KEY, PARTIAL_KEY
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc, recommendation_pb2

Metadata = tuple[tuple[str, str], ...]


@dataclass
class StreamRead:
    """One stream as its caller saw it."""

    items: list[recommendation_pb2.RankedProduct] = field(default_factory=list)
    arrived_ms: list[float] = field(default_factory=list)
    """When each item arrived, in ms since the call started."""
    code: str = "OK"
    details: str = ""
    partial: bool = False
    """The gateway's flag: it failed after some items had been sent."""
    flagged_messages: int | None = None
    """The gateway's count of items sent before the failure."""
    trailers: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "items": [
                {"rank": i.rank, "product_id": i.product.product_id, "title": i.product.title}
                for i in self.items
            ],
            "code": self.code,
            "details": self.details,
            "partial": self.partial,
            "messages_before_error": self.flagged_messages,
        }


def _text(value: str | bytes) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


async def read_stream(
    stub: gateway_pb2_grpc.GatewayStub,
    user_id: str,
    limit: int,
    timeout_s: float,
    metadata: Metadata,
    on_item: Any = None,
) -> StreamRead:
    """Reads the whole stream; `on_item(read, item)` is called as each arrives."""
    read = StreamRead()
    started = time.perf_counter()
    call = stub.StreamRecommendations(
        gateway_pb2.GetHomeRequest(user_id=user_id, limit=limit),
        timeout=timeout_s,
        metadata=metadata,
    )
    try:
        async for item in call:
            read.items.append(item)
            read.arrived_ms.append((time.perf_counter() - started) * 1000)
            if on_item is not None:
                on_item(read, item)
    except grpc.aio.AioRpcError as err:
        read.code = err.code().name
        read.details = err.details() or ""
        read.trailers = {k: _text(v) for k, v in err.trailing_metadata() or ()}
        read.partial = read.trailers.get(PARTIAL_KEY) == "true"
        count = read.trailers.get(MESSAGES_KEY, "")
        read.flagged_messages = int(count) if count.isascii() and count.isdigit() else None
    finally:
        call.cancel()
    return read
