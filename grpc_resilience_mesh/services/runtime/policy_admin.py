"""Loopback admin: replace a running service's resilience policy (experiments' variants)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import grpc
import yaml

from grpc_resilience_mesh.services.policy.loading import PolicyError, load_policy_text
from grpc_resilience_mesh.services.policy.model import MeshPolicy
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc


def policy_yaml(policy: MeshPolicy) -> str:
    return yaml.safe_dump(policy.model_dump(mode="json"), sort_keys=False)


class PolicyAdminServicer(admin_pb2_grpc.PolicyAdminServicer):
    """SetPolicy validates the document, then swaps every pipeline of this service at once: calls
    already in flight finish under the old one, new calls start under the new one (gRPC's own
    retries included: their edge gets a new channel, grpc_resilience_mesh.services.runtime.edges).

    The document is parsed by grpc_resilience_mesh.services.safe_yaml (size, depth and alias limits)
    in a worker thread, so the largest document it accepts (64 KiB, about 0.2 s of parsing) does not
    hold the event loop for the whole parse; a refusal is INVALID_ARGUMENT naming the key and the
    rule.
    """

    def __init__(
        self, current: Callable[[], MeshPolicy], swap: Callable[[MeshPolicy], None]
    ) -> None:
        """`current()` is the policy in force; `swap(policy)` puts a validated one in force."""
        self._current = current
        self._swap = swap

    async def SetPolicy(
        self, request: admin_pb2.SetPolicyRequest, context: grpc.aio.ServicerContext
    ) -> admin_pb2.PolicyInfo:
        if not request.yaml.strip():
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "yaml: required")
        try:
            policy = await asyncio.to_thread(load_policy_text, request.yaml, "SetPolicy.yaml")
        except PolicyError as err:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        self._swap(policy)
        return admin_pb2.PolicyInfo(name=policy.name, yaml=policy_yaml(policy))

    async def GetPolicy(
        self, request: admin_pb2.GetPolicyRequest, context: grpc.aio.ServicerContext
    ) -> admin_pb2.PolicyInfo:
        policy = self._current()
        return admin_pb2.PolicyInfo(name=policy.name, yaml=policy_yaml(policy))
