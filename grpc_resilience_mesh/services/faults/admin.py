"""mesh.v1.FaultAdmin: edit a service's FaultTable at runtime (bound on a loopback admin port)."""

from __future__ import annotations

import grpc
import grpc.aio

from grpc_resilience_mesh.services.faults.injection import (
    FaultSpec,
    FaultTable,
    FaultValidationError,
)
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc


def _to_proto(spec: FaultSpec) -> admin_pb2.Fault:
    return admin_pb2.Fault(
        method=spec.method,
        error_rate=spec.error_rate,
        code=spec.code.name,
        delay_s=spec.delay_s,
        pushback_ms=spec.pushback_ms,
        after_messages=spec.after_messages,
        first_attempt_only=spec.first_attempt_only,
        service_time_factor=spec.service_time_factor,
    )


class FaultAdminServicer(admin_pb2_grpc.FaultAdminServicer):
    """Validates and applies fault edits; bad input fails with INVALID_ARGUMENT naming the field."""

    def __init__(self, faults: FaultTable) -> None:
        self._faults = faults

    def _listing(self) -> admin_pb2.FaultList:
        return admin_pb2.FaultList(faults=[_to_proto(f) for f in self._faults.list()])

    async def SetFault(
        self, request: admin_pb2.SetFaultRequest, context: grpc.aio.ServicerContext
    ) -> admin_pb2.FaultList:
        fault = request.fault
        try:
            spec = FaultSpec.parse(
                fault.method,
                fault.error_rate,
                fault.code,
                fault.delay_s,
                fault.pushback_ms,
                fault.after_messages,
                fault.first_attempt_only,
                fault.service_time_factor,
            )
        except FaultValidationError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"fault.{exc}")
        self._faults.set(spec)
        return self._listing()

    async def ClearFaults(
        self, request: admin_pb2.ClearFaultsRequest, context: grpc.aio.ServicerContext
    ) -> admin_pb2.FaultList:
        self._faults.clear(request.method)
        return self._listing()

    async def ListFaults(
        self, request: admin_pb2.ListFaultsRequest, context: grpc.aio.ServicerContext
    ) -> admin_pb2.FaultList:
        return self._listing()
