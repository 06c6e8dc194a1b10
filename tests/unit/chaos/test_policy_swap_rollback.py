"""A variant's policy goes on every service or on none: a refusal puts back the ones swapped;
every service is read and set at once (a swap per variant, about 48 in `mesh demo`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import grpc
import grpc.aio
import pytest

from grpc_resilience_mesh.chaos.run.policy_swap import PolicySwapFailed, swap_policy
from grpc_resilience_mesh.services.v1 import admin_pb2


class FakeAdmin:
    """A service's PolicyAdmin: holds a policy document; its first SetPolicy fails with
    `fails_with`, if given."""

    def __init__(self, policy: str, fails_with: grpc.StatusCode | None = None) -> None:
        self.policy = policy
        self.fails_with = fails_with
        self.applied_while_failing = False
        """Whether a failing SetPolicy took the policy anyway (a timeout after the swap)."""

    def GetPolicy(
        self, request: admin_pb2.GetPolicyRequest, *, timeout: float
    ) -> Awaitable[admin_pb2.PolicyInfo]:
        return self._get()

    def SetPolicy(
        self, request: admin_pb2.SetPolicyRequest, *, timeout: float
    ) -> Awaitable[admin_pb2.PolicyInfo]:
        return self._set(request)

    async def _get(self) -> admin_pb2.PolicyInfo:
        return admin_pb2.PolicyInfo(name="p", yaml=self.policy)

    async def _set(self, request: admin_pb2.SetPolicyRequest) -> admin_pb2.PolicyInfo:
        if self.fails_with is not None:  # the first SetPolicy only
            code, self.fails_with = self.fails_with, None
            if self.applied_while_failing:
                self.policy = request.yaml
            raise grpc.aio.AioRpcError(
                code, grpc.aio.Metadata(), grpc.aio.Metadata(), details="no, thanks"
            )
        self.policy = request.yaml
        return admin_pb2.PolicyInfo(name="p", yaml=self.policy)


async def test_every_service_takes_the_policy() -> None:
    admins = {name: FakeAdmin("name: full") for name in ("gateway", "payment", "profile")}
    await swap_policy(admins, "name: retry-only")
    assert {a.policy for a in admins.values()} == {"name: retry-only"}


async def test_a_refusal_puts_back_the_services_already_swapped() -> None:
    admins = {
        "gateway": FakeAdmin("name: full"),
        "payment": FakeAdmin("name: full+small"),
        "profile": FakeAdmin("name: full", fails_with=grpc.StatusCode.FAILED_PRECONDITION),
        "recommendation": FakeAdmin("name: full"),
    }
    with pytest.raises(PolicySwapFailed) as info:
        await swap_policy(admins, "name: unprotected")
    # No mixed mesh: each service runs what it ran before, the swapped ones included.
    assert {n: a.policy for n, a in admins.items()} == {
        "gateway": "name: full",
        "payment": "name: full+small",
        "profile": "name: full",
        "recommendation": "name: full",
    }
    message = str(info.value)
    assert message.startswith("profile: SetPolicy FAILED_PRECONDITION: no, thanks"), message
    assert "put back on their policy: gateway, payment, recommendation)" in message


async def test_a_timeout_that_may_have_applied_is_put_back_too() -> None:
    slow = FakeAdmin("name: full", fails_with=grpc.StatusCode.DEADLINE_EXCEEDED)
    slow.applied_while_failing = True
    admins = {"gateway": FakeAdmin("name: full"), "payment": slow}
    with pytest.raises(PolicySwapFailed) as info:
        await swap_policy(admins, "name: unprotected")
    assert {a.policy for a in admins.values()} == {"name: full"}
    assert "put back on their policy: gateway, payment)" in str(info.value)


async def test_a_service_that_cannot_be_read_stops_the_swap_before_any_change() -> None:
    class Unreachable(FakeAdmin):
        async def _get(self) -> admin_pb2.PolicyInfo:
            raise grpc.aio.AioRpcError(
                grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata()
            )

    admins = {"gateway": FakeAdmin("name: full"), "payment": Unreachable("name: full")}
    with pytest.raises(PolicySwapFailed, match="payment: GetPolicy UNAVAILABLE"):
        await swap_policy(admins, "name: unprotected")
    assert admins["gateway"].policy == "name: full"


async def test_every_service_is_set_at_once_not_one_after_another() -> None:
    """Each SetPolicy answers only once every service has been asked: one after another, the
    first would wait for the others forever (here, for its 2 s bound)."""
    asked: set[str] = set()
    everyone = asyncio.Event()

    class Waiting(FakeAdmin):
        def __init__(self, name: str) -> None:
            super().__init__("name: full")
            self.name = name

        async def _set(self, request: admin_pb2.SetPolicyRequest) -> admin_pb2.PolicyInfo:
            asked.add(self.name)
            if len(asked) == len(admins):
                everyone.set()
            await asyncio.wait_for(everyone.wait(), 2.0)
            return await super()._set(request)

    admins = {name: Waiting(name) for name in ("gateway", "payment", "profile", "recommendation")}
    await swap_policy(admins, "name: retry-only")
    assert {a.policy for a in admins.values()} == {"name: retry-only"}
