"""Server reflection that describes a port's own services and nothing else.

grpc's reflection answers from the process's default descriptor pool, which holds every file
any module imported: on the gateway's public port `file_containing_symbol` handed out the
schemas of PolicyAdmin and FaultAdmin (served only on the loopback admin port) and of the
internal services. Each port here gets a pool of its own: the files defining the services it
serves, plus the files those import with every service definition removed from them, so a
dependency lends its message types but no other service's methods.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc.aio
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import FileDescriptor
from grpc_reflection.v1alpha import reflection


def pool_of(service_names: Iterable[str]) -> descriptor_pool.DescriptorPool:
    """The files defining `service_names` (keeping only those services) and their imports."""
    served = set(service_names)
    default = descriptor_pool.Default()
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(file: FileDescriptor) -> None:
        if file.name in added:
            return
        for dependency in file.dependencies:
            add(dependency)
        proto = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(proto)
        kept = [s for s in proto.service if f"{file.package}.{s.name}".lstrip(".") in served]
        del proto.service[:]
        proto.service.extend(kept)
        pool.Add(proto)
        added.add(file.name)

    for name in sorted(served):
        add(default.FindServiceByName(name).file)
    return pool


def enable_reflection(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Reflection on `server` listing, and describing, `service_names` and itself only."""
    names = (*service_names, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(names, server, pool=pool_of(names))
