"""A method by its full name, resolved through the target's server reflection, a descriptor
set or .proto files, before any load starts."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from grpc_resilience_mesh.loadgen.any_method.descriptors import (
    pool_of,
    read_descriptor_set,
    services_of,
)
from grpc_resilience_mesh.loadgen.any_method.method import (
    LoadInputError,
    MethodInfo,
    method_in_pool,
    split_method_name,
)
from grpc_resilience_mesh.loadgen.any_method.protos import compile_protos
from grpc_resilience_mesh.loadgen.any_method.reflection import reflect


async def resolve_method(
    target: str,
    method: str,
    *,
    descriptor_set: Path | None = None,
    timeout_s: float = 5.0,
    protos: Sequence[Path] = (),
    proto_path: Sequence[Path] = (),
) -> MethodInfo:
    """`method` ("/pkg.Service/Method" or "pkg.Service/Method") as served at `target`: from
    `descriptor_set` when given, or from `protos` compiled with `proto_path` as include paths
    (either way the target is not asked), else by reflection within `timeout_s`.
    LoadInputError names what went wrong and, for a wrong name, what exists."""
    service, _ = split_method_name(method)
    if descriptor_set is not None and protos:
        raise LoadInputError("give descriptor_set or protos, not both")
    if protos:
        files = await asyncio.to_thread(compile_protos, protos, proto_path)
        where = ", ".join(str(p) for p in protos)
        return method_in_pool(pool_of(files), services_of(files.values()), method, where)
    if descriptor_set is not None:
        files = read_descriptor_set(descriptor_set)
        return method_in_pool(
            pool_of(files), services_of(files.values()), method, str(descriptor_set)
        )
    services, files = await reflect(target, service, timeout_s)
    return method_in_pool(pool_of(files), services, method, target)
