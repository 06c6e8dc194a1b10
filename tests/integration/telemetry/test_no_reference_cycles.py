"""A traced call leaves nothing for the cyclic garbage collector: refcounting frees it all.

Every object a call leaves in a reference cycle lives until a collection finds it, and until
then counts toward the next one: when each traced call left ~40 (its call span was held by the
context grpc.aio copies into the attempt's task, and held the call's state, which led back to
that task), collections ran five times as often and the older generations' ones cost ~20 us
per call (issue 15, round 5; the benchmark notes of commit 29ba4a8). grpc.aio's own server-side
lookup leaves a few objects per call in a cycle with or without us; those are not ours and are
not counted here.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from grpc_aio_resilience.channel import resilient_channel
from grpc_aio_resilience.clock import SystemClock
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.interceptor import ResilienceInterceptor
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.policy.loading import load_policy
from grpc_resilience_mesh.services.runtime.server_chain import server_layers
from grpc_resilience_mesh.services.telemetry.tracing import (
    MeshTracing,
    server_tracing,
    setup_tracing,
)
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc
from tests.integration.resilience.servers import serving

CALLS = 40
GRPC_OWN = {"_Metadatum", "tuple", "_HandlerCallDetails", "cython_function_or_method"}
"""What grpc.aio's server leaves in a cycle per call (its handler lookup's closure)."""


class _Profile(profile_pb2_grpc.ProfileServiceServicer):
    async def GetProfile(self, request: Any, context: Any) -> profile_pb2.GetProfileResponse:
        return profile_pb2.GetProfileResponse(profile=profile_pb2.Profile(user_id="u1"))


@pytest.fixture(params=[1, 2], ids=["one-server", "replica-router"])
async def traced_stub(
    tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[profile_pb2_grpc.ProfileServiceStub]:
    """The full pipeline and the mesh's spans on both sides, as a service mounts them; over
    two replicas the edge's replica router picks one per attempt."""
    provider = setup_tracing("profile", {"MESH_TRACES_DIR": str(tmp_path)})
    assert provider is not None
    tracing = MeshTracing(provider)
    bus = EventBus()
    bus.subscribe(tracing.listener)
    policy = load_policy("full", {})
    interceptors = server_layers(
        "profile", policy.server("profile"), bus, FaultTable(), tracing=server_tracing(tracing)
    )
    register = partial(profile_pb2_grpc.add_ProfileServiceServicer_to_server, _Profile())
    edge = policy.edge("gateway_to_profile")
    pipeline = build_pipeline(
        edge,
        dependency="profile",
        bus=bus,
        clock=SystemClock(),
        attempt_observer=tracing.attempt_observer,
        call_observer=tracing.call_observer,
    )
    async with AsyncExitStack() as servers:
        targets = [
            await servers.enter_async_context(serving(register, interceptors))
            for _ in range(request.param)
        ]
        channel = resilient_channel(
            ",".join(targets),
            ResilienceInterceptor(pipeline, dependency="profile", clock=SystemClock()),
            native_retry=edge.native_retry,
            outlier=edge.outlier,
            bus=bus,
            dependency="profile",
        )
        try:
            yield profile_pb2_grpc.ProfileServiceStub(channel)
        finally:
            await channel.close()
    await tracing.shutdown()


async def test_a_traced_call_leaves_no_cycle_of_its_own(
    traced_stub: profile_pb2_grpc.ProfileServiceStub,
) -> None:
    request = profile_pb2.GetProfileRequest(user_id="u1")
    await traced_stub.GetProfile(request, timeout=5)  # channel connected, caches warm
    gc.collect()
    # Everything alive now stays alive until the count: an earlier test's objects that grpc's
    # threads let go of during the calls (seen: a replica router and its events) are not
    # this call's cycles.
    before = gc.get_objects()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(CALLS):
            await traced_stub.GetProfile(request, timeout=5)
        gc.collect()
        left = Counter(type(obj).__name__ for obj in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        del before
    # grpc's closure types are numbered by its build (__pyx_scope_struct_<n>_...).
    ours = {
        name: count
        for name, count in left.items()
        if name not in GRPC_OWN and not name.startswith("__pyx_scope_struct_")
    }
    assert ours == {}, f"left in cycles by {CALLS} traced calls: {ours}"
