"""The admin server every service runs beside its public one: FaultAdmin and PolicyAdmin on
ADMIN_ADDR (loopback by default), behind the admin token when one is configured. A service
that dials a dependency through xDS (`mesh up --xds`) serves CSDS there too (gRFC A40,
grpcio-csds): the xDS resources its gRPC client holds, and whether it ACKed or NACKed each."""

from __future__ import annotations

from collections.abc import Callable

import grpc

from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.faults.admin import FaultAdminServicer
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.runtime.admin_auth import AdminTokenLayer
from grpc_resilience_mesh.services.runtime.config import ServiceConfig
from grpc_resilience_mesh.services.runtime.connections import connection_options
from grpc_resilience_mesh.services.runtime.decoding import RequestDecodingInterceptor
from grpc_resilience_mesh.services.runtime.grpc_options import (
    bind,
    exclusive_port_options,
    message_size_options,
)
from grpc_resilience_mesh.services.runtime.policy_admin import PolicyAdminServicer
from grpc_resilience_mesh.services.runtime.reflection import enable_reflection
from grpc_resilience_mesh.services.runtime.server_chain import ServerChain
from grpc_resilience_mesh.services.settings import XDS_EXTRA, XDS_SCHEME
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc


def dials_xds(config: ServiceConfig) -> bool:
    """Whether any dependency is an xds:/// target (its client then has xDS config to show)."""
    return any(addr.startswith(XDS_SCHEME) for addr in config.dependencies.values())


def csds_adder(config: ServiceConfig) -> Callable[[grpc.aio.Server], str] | None:
    """What serves CSDS on the admin server when the service dials through xDS, else None.
    grpcio-csds is the `[xds]` extra's: without it, a ConfigError naming the xds:/// variables
    and the install, before the admin server is made (serve() stops the public one)."""
    if not dials_xds(config):
        return None
    try:
        from grpc_resilience_mesh.services.runtime.csds import add_csds
    except ImportError as err:
        names = sorted(
            f"{dep.upper()}_ADDR"
            for dep, addr in config.dependencies.items()
            if addr.startswith(XDS_SCHEME)
        )
        raise ConfigError(
            f"{', '.join(names)}: an xds:/// target makes the admin port serve CSDS, which "
            f"needs grpcio-csds ({err}): {XDS_EXTRA}"
        ) from None
    return add_csds


async def start_admin(
    config: ServiceConfig,
    faults: FaultTable,
    policy_admin: PolicyAdminServicer,
    max_connections: int,
) -> tuple[grpc.aio.Server, int]:
    """The started admin server and its port (a ConfigError naming ADMIN_ADDR if it cannot
    bind)."""
    add_csds = csds_adder(config)
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
    if add_csds is not None:
        served.append(add_csds(admin))
    enable_reflection(served, admin)
    try:
        port = bind("ADMIN_ADDR", config.admin_addr, admin.add_insecure_port)
    except ConfigError:
        await admin.stop(0)
        raise
    await admin.start()
    return admin, port
