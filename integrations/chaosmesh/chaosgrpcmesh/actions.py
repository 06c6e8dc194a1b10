"""Actions on the mesh's admin API: a policy swap on every service (and the old one put
back), application faults through each service's FaultAdmin, every fault removed.

A fault or policy that cannot be applied stops the run (not_applied): a run that goes on
would report, as a finding, what the mesh did without it."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import grpc.aio
from chaoslib.exceptions import InterruptExecution

from chaosgrpcmesh.mesh import STARTED, run, state_file, target
from grpc_resilience_mesh.chaos.experiment.model import AppFault
from grpc_resilience_mesh.chaos.run.faults import Injector
from grpc_resilience_mesh.chaos.run.policy_swap import AuthorizedPolicyAdmin, swap_over
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc

Configuration = dict[str, Any] | None

SAVED: dict[str, str] = {}
"""Per service, the policy it ran before this run's first swap_policy (restore_policy)."""


def swap_policy(policy_yaml: str, configuration: Configuration = None) -> list[str]:
    """`policy_yaml` on every service of the mesh, or on none (mesh chaos run's swap: fresh
    breakers, budgets and bulkheads, no restart); the services swapped."""
    tgt = target(configuration)

    async def swap() -> None:
        if not SAVED:
            SAVED.update(await _current(tgt.admin, tgt.admin_token))
        await swap_over(tgt.admin, tgt.admin_token, policy_yaml)

    run(swap())
    return sorted(tgt.admin)


async def _current(admin: dict[str, str], token: str | None) -> dict[str, str]:
    out = {}
    for service, addr in admin.items():
        async with grpc.aio.insecure_channel(addr) as channel:
            stub = AuthorizedPolicyAdmin(admin_pb2_grpc.PolicyAdminStub(channel), token)
            out[service] = (await stub.GetPolicy(admin_pb2.GetPolicyRequest(), timeout=5)).yaml
    return out


def restore_policy(configuration: Configuration = None) -> list[str]:
    """Every service back on the policy it ran before swap_policy (a rollback); the services
    put back (none when no swap happened)."""
    tgt = target(configuration)
    groups: dict[str, list[str]] = defaultdict(list)
    for service, text in SAVED.items():
        groups[text].append(service)

    async def put_back() -> None:
        for text, services in groups.items():
            await swap_over({s: tgt.admin[s] for s in services}, tgt.admin_token, text)

    run(put_back())
    SAVED.clear()
    return sorted(s for group in groups.values() for s in group)


def set_app_fault(
    service: str,
    method: str,
    error_rate: float = 1.0,
    code: str = "UNAVAILABLE",
    delay_s: float = 0.0,
    pushback_ms: int = -1,
    first_attempt_only: bool = False,
    configuration: Configuration = None,
) -> str:
    """An application fault on every replica of `service` (its fault interceptor): calls of
    `method` fail with `code` at `error_rate`, after `delay_s`; what was set."""
    STARTED.add("method")
    fault = AppFault(
        type="app_fault",
        service=service,  # type: ignore[arg-type]
        method=method,
        error_rate=error_rate,
        code=code,
        delay_s=delay_s,
        pushback_ms=pushback_ms,
        first_attempt_only=first_attempt_only,
    )
    tgt = target(configuration)
    try:
        run(Injector(None, tgt.admin, admin_token=tgt.admin_token).set(0, fault, True))
    except grpc.aio.AioRpcError as err:
        raise not_applied(f"app fault on {service}", err, configuration) from None
    return f"{service} {fault.full_method}: {code} at {error_rate:g}"


def clear_faults(configuration: Configuration = None) -> bool:
    """Every toxic removed, every proxy enabled, every app fault cleared (mesh chaos run's
    kill switch); never raises."""
    tgt = target(configuration)
    toxi = ToxiproxyClient(tgt.toxiproxy, token=tgt.admin_token) if tgt.toxiproxy else None
    run(Injector(toxi, tgt.admin, admin_token=tgt.admin_token).reset_all())
    return True


def not_applied(what: str, err: Exception, configuration: Configuration) -> InterruptExecution:
    """The run's end, to raise: `what` could not be applied, so nothing measured after it is a
    finding. Every fault is removed first: Chaos Toolkit plays no rollback after an
    interruption (the after-experiment control still puts the policy back)."""
    reason = f"{err.code().name}: {err.details()}" if isinstance(err, grpc.aio.AioRpcError) else err
    refused = isinstance(err, ToxiproxyError) and err.status in (401, 403)
    hint = (
        f" (the admin token in {state_file(configuration)} is not the running mesh's: is that "
        "mesh.json the one `mesh up` wrote for it?)"
        if refused or "UNAUTHENTICATED" in str(reason)
        else ""
    )
    clear_faults(configuration)
    return InterruptExecution(f"not applied, run stopped: {what}: {reason}{hint}")
