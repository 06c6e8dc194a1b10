"""The admin server every service runs beside its public one: FaultAdmin and PolicyAdmin on
ADMIN_ADDR (loopback by default), behind the admin token when one is configured. A service
that dials a dependency through xDS (`mesh up --xds`) serves CSDS there too (gRFC A40,
grpcio-csds): the xDS resources its gRPC client holds, and whether it ACKed or NACKed each."""

from __future__ import annotations

import grpc

from mesh.config_error import ConfigError
from mesh.faults.admin import FaultAdminServicer
from mesh.faults.injection import FaultTable
from mesh.runtime.admin_auth import AdminTokenLayer
from mesh.runtime.config import ServiceConfig
from mesh.runtime.connections import connection_options
from mesh.runtime.decoding import RequestDecodingInterceptor
from mesh.runtime.grpc_options import bind, exclusive_port_options, message_size_options
from mesh.runtime.policy_admin import PolicyAdminServicer
from mesh.runtime.reflection import enable_reflection
from mesh.runtime.server_chain import ServerChain
from mesh.settings import XDS_SCHEME
from mesh.v1 import admin_pb2, admin_pb2_grpc


def dials_xds(config: ServiceConfig) -> bool:
    """Whether any dependency is an xds:/// target (its client then has xDS config to show)."""
    return any(addr.startswith(XDS_SCHEME) for addr in config.dependencies.values())


async def start_admin(
    config: ServiceConfig,
    faults: FaultTable,
    policy_admin: PolicyAdminServicer,
    max_connections: int,
) -> tuple[grpc.aio.Server, int]:
    """The started admin server and its port (a ConfigError naming ADMIN_ADDR if it cannot
    bind)."""
    gate = [AdminTokenLayer(config.admin_token)] if config.admin_token else []
    admin = grpc.aio.server(
        interceptors=[ServerChain([*gate, RequestDecodingInterceptor()])],
        options=[
            *message_size_options(config.max_message_bytes),
            *exclusive_port_options(),
            *connection_options(
                max_connections, config.handshake_timeout_s, config.settings_ack_timeout_s
            ),
        ],
    )
    admin_pb2_grpc.add_FaultAdminServicer_to_server(FaultAdminServicer(faults), admin)
    admin_pb2_grpc.add_PolicyAdminServicer_to_server(policy_admin, admin)
    served = [
        admin_pb2.DESCRIPTOR.services_by_name[s].full_name for s in ("FaultAdmin", "PolicyAdmin")
    ]
    if dials_xds(config):
        from mesh.runtime.csds import add_csds  # the envoy protos: only where xDS is used

        served.append(add_csds(admin))
    enable_reflection(served, admin)
    try:
        port = bind("ADMIN_ADDR", config.admin_addr, admin.add_insecure_port)
    except ConfigError:
        await admin.stop(0)
        raise
    await admin.start()
    return admin, port
