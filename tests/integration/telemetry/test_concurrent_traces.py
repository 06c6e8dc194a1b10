"""Calls served at the same time each continue their own caller's trace.

The tracing interceptor makes a method's behaviour once and hands each call's trace headers to
it through the call's own task; calls whose handling interleaves (each waits for its request
after the handler lookup) must not see each other's headers.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path
from typing import Any

import grpc
import grpc.aio

from grpc_resilience_mesh.services.telemetry.tracing import (
    MeshTracing,
    server_tracing,
    setup_tracing,
)
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc
from tests.integration.resilience.servers import ProfileFake, profile_servicer, serving

CALLS = 24


async def test_overlapping_calls_are_children_of_their_own_callers(tmp_path: Path) -> None:
    provider = setup_tracing("profile", {"MESH_TRACES_DIR": str(tmp_path)})
    assert provider is not None
    in_flight = 0
    most_in_flight = 0

    async def overlap(request: Any, context: grpc.aio.ServicerContext) -> None:
        nonlocal in_flight, most_in_flight
        in_flight += 1
        most_in_flight = max(most_in_flight, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1

    interceptors = server_tracing(MeshTracing(provider))
    sent: dict[str, str] = {}  # trace id -> the caller's span id
    async with serving(profile_servicer(ProfileFake(overlap)), interceptors) as target:
        async with grpc.aio.insecure_channel(target) as channel:
            stub = profile_pb2_grpc.ProfileServiceStub(channel)

            async def call() -> None:
                trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
                sent[trace_id] = span_id
                await stub.GetProfile(
                    profile_pb2.GetProfileRequest(user_id="u1"),
                    timeout=10,
                    metadata=(("traceparent", f"00-{trace_id}-{span_id}-01"),),
                )

            await asyncio.gather(*(call() for _ in range(CALLS)))
    await asyncio.to_thread(provider.shutdown)

    assert most_in_flight > 1
    lines = (tmp_path / "profile.jsonl").read_text().splitlines()
    received = {r["trace_id"]: r["parent_span_id"] for r in map(json.loads, lines)}
    assert received == sent
