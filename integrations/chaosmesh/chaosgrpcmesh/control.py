"""A Chaos Toolkit control: the variant's policy on every service before the steady state
(as `mesh chaos run` swaps it in before its steady state), the old one back at the end.

Chaos Toolkit logs a failing control at debug level and runs on; a swap that fails here stops
the run instead (InterruptExecution), since every figure after it would be another policy's."""

from __future__ import annotations

from typing import Any

import grpc.aio

from chaosgrpcmesh.actions import not_applied, restore_policy, swap_policy
from grpc_resilience_mesh.chaos.run.policy_swap import PolicySwapFailed


def before_experiment_control(
    context: Any, policy_yaml: str = "", configuration: dict[str, Any] | None = None, **_: Any
) -> None:
    """Swap `policy_yaml` onto every service (chaosgrpcmesh.actions.swap_policy) before anything."""
    if policy_yaml:
        try:
            swap_policy(policy_yaml, configuration)
        except (grpc.aio.AioRpcError, PolicySwapFailed) as err:
            raise not_applied("the variant's policy", err, configuration) from None


def after_experiment_control(
    context: Any, state: Any = None, configuration: dict[str, Any] | None = None, **_: Any
) -> None:
    """Every service back on the policy it ran before (a no-op when a rollback already did)."""
    restore_policy(configuration)
