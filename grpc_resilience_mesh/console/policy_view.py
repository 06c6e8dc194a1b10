"""The policy in force as the services report it (PolicyAdmin.GetPolicy), not the one `mesh up`
started with: an experiment's variant swaps it in place (a header that read mesh.json said
"policy full" while retry-only ran)."""

from __future__ import annotations

import grpc

from grpc_resilience_mesh.console.faults import ADMIN_TIMEOUT_S, FaultControl
from grpc_resilience_mesh.services.topology import replica_of
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc


def policies_in_force(
    control: FaultControl, metadata: tuple[tuple[str, str], ...]
) -> dict[str, str]:
    """Each service's policy name (its first process speaks for it); one that does not answer
    is left out."""
    found: dict[str, str] = {}
    for instance in sorted(n for n in control.admin if replica_of(n) == n):
        stub = admin_pb2_grpc.PolicyAdminStub(control.channel(instance))
        try:
            info = stub.GetPolicy(
                admin_pb2.GetPolicyRequest(), timeout=ADMIN_TIMEOUT_S, metadata=metadata
            )
        except grpc.RpcError:
            continue
        found[instance] = info.name
    return found


def policy_label(by_service: dict[str, str], started_with: str) -> str:
    """`retry-only` when every service runs it; `mixed (gateway retry-only, ...)` when they
    differ; what the mesh started with when none answered."""
    names = set(by_service.values())
    if not names:
        return started_with
    if len(names) == 1:
        return names.pop()
    return "mixed (" + ", ".join(f"{s} {n}" for s, n in sorted(by_service.items())) + ")"
