"""CSDS (gRFC A40) on the admin server of a service that dials through xDS: grpcio-csds's
servicer, whose handlers are plain functions, behind async ones, since the admin server's
interceptor chain awaits every handler it wraps (the stock servicer there answered UNKNOWN:
"object ClientStatusResponse can't be used in 'await' expression")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
from envoy.service.status.v3 import csds_pb2, csds_pb2_grpc
from grpc_csds import ClientStatusDiscoveryServiceServicer

CSDS_SERVICE = "envoy.service.status.v3.ClientStatusDiscoveryService"


class AsyncCsdsServicer(csds_pb2_grpc.ClientStatusDiscoveryServiceServicer):  # type: ignore[misc]
    """This process's xDS client config (every channel's), as CSDS answers it."""

    async def FetchClientStatus(
        self, request: csds_pb2.ClientStatusRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> csds_pb2.ClientStatusResponse:
        return ClientStatusDiscoveryServiceServicer.FetchClientStatus(request, context)

    async def StreamClientStatus(
        self,
        requests: AsyncIterator[csds_pb2.ClientStatusRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[csds_pb2.ClientStatusResponse]:
        async for request in requests:
            yield ClientStatusDiscoveryServiceServicer.FetchClientStatus(request, context)


def add_csds(server: grpc.aio.Server) -> str:
    """Serve CSDS on `server`; its full service name (for reflection)."""
    csds_pb2_grpc.add_ClientStatusDiscoveryServiceServicer_to_server(AsyncCsdsServicer(), server)
    return CSDS_SERVICE
