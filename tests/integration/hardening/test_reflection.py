"""Reflection on a port describes that port's services only: the gateway's public port never
hands out the admin schemas (PolicyAdmin, FaultAdmin) nor the internal services' methods."""

from __future__ import annotations

import asyncio

import grpc
import grpc.aio
import pytest
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from tests.integration.hardening.inproc_services import Served, serving

PUBLIC = {"mesh.v1.Gateway", "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"}
ADMIN_SYMBOLS = (
    "mesh.v1.PolicyAdmin",
    "mesh.v1.FaultAdmin",
    "mesh.v1.SetPolicyRequest",
    "mesh.v1.SetFaultRequest",
)
INTERNAL_SYMBOLS = ("mesh.v1.PaymentService", "mesh.v1.ProfileService.GetProfile")


@pytest.fixture
async def gateway() -> Served:  # type: ignore[misc]
    async with serving(("gateway",), env={"MESH_API_KEYS": "reflection-test-key"}) as served:
        yield served


async def _ask(
    addr: str, requests: list[reflection_pb2.ServerReflectionRequest]
) -> list[reflection_pb2.ServerReflectionResponse]:
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        call = stub.ServerReflectionInfo(iter(requests), timeout=5)
        return [reply async for reply in call]


def _symbols(reply: reflection_pb2.ServerReflectionResponse) -> set[str]:
    names = set()
    for raw in reply.file_descriptor_response.file_descriptor_proto:
        proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
        names |= {f"{proto.package}.{s.name}" for s in proto.service}
    return names


async def test_public_port_does_not_describe_admin_or_internal_services(gateway: Served) -> None:
    symbols = (*ADMIN_SYMBOLS, *INTERNAL_SYMBOLS)
    replies = await _ask(
        gateway.listen["gateway"],
        [reflection_pb2.ServerReflectionRequest(file_containing_symbol=s) for s in symbols],
    )
    codes = {
        s: grpc.StatusCode.NOT_FOUND.value[0] == r.error_response.error_code
        for s, r in zip(symbols, replies, strict=True)
    }
    assert all(codes.values()), codes
    replies = await _ask(
        gateway.listen["gateway"],
        [reflection_pb2.ServerReflectionRequest(file_by_filename="mesh/v1/admin.proto")],
    )
    assert replies[0].error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]


async def test_public_port_still_describes_the_public_api(gateway: Served) -> None:
    def client_view() -> tuple[set[str], list[str], str]:
        with grpc.insecure_channel(gateway.listen["gateway"]) as channel:
            db = ProtoReflectionDescriptorDatabase(channel)
            services = set(db.get_services())
            home = db.FindFileContainingSymbol("mesh.v1.Gateway")
            charge = db.FindFileContainingSymbol("mesh.v1.GetChargeRequest")
            return services, [m.name for m in home.service[0].method], charge.name

    services, methods, charge_file = await asyncio.to_thread(client_view)
    assert services == PUBLIC
    assert {"GetHome", "Checkout", "GetCharge"} <= set(methods)
    assert charge_file == "mesh/v1/payment.proto"  # a dependency lends its message types...
    replies = await _ask(
        gateway.listen["gateway"],
        [reflection_pb2.ServerReflectionRequest(file_containing_symbol="mesh.v1.Gateway")],
    )
    assert _symbols(replies[0]) == {"mesh.v1.Gateway"}  # ...but none of its services


async def test_admin_port_describes_the_admin_services(gateway: Served) -> None:
    replies = await _ask(
        gateway.admin["gateway"],
        [
            reflection_pb2.ServerReflectionRequest(file_containing_symbol="mesh.v1.PolicyAdmin"),
            reflection_pb2.ServerReflectionRequest(list_services=""),
        ],
    )
    assert {"mesh.v1.PolicyAdmin", "mesh.v1.FaultAdmin"} <= _symbols(replies[0])
    listed = {s.name for s in replies[1].list_services_response.service}
    assert listed == {
        "mesh.v1.PolicyAdmin",
        "mesh.v1.FaultAdmin",
        "grpc.reflection.v1alpha.ServerReflection",
    }
