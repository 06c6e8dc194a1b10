"""A method by its full name, resolved through the target's server reflection or a descriptor
set, before any load starts."""

from __future__ import annotations

from pathlib import Path

from grpc_resilience_mesh.loadgen.any_method.descriptors import (
    pool_of,
    read_descriptor_set,
    services_of,
)
from grpc_resilience_mesh.loadgen.any_method.method import (
    MethodInfo,
    method_in_pool,
    split_method_name,
)
from grpc_resilience_mesh.loadgen.any_method.reflection import reflect


async def resolve_method(
    target: str, method: str, *, descriptor_set: Path | None = None, timeout_s: float = 5.0
) -> MethodInfo:
    """`method` ("/pkg.Service/Method" or "pkg.Service/Method") as served at `target`: from
    `descriptor_set` when given (the target is not asked), else by reflection within
    `timeout_s`. LoadInputError names what went wrong and, for a wrong name, what exists."""
    service, _ = split_method_name(method)
    if descriptor_set is not None:
        files = read_descriptor_set(descriptor_set)
        return method_in_pool(
            pool_of(files), services_of(files.values()), method, str(descriptor_set)
        )
    services, files = await reflect(target, service, timeout_s)
    return method_in_pool(pool_of(files), services, method, target)
