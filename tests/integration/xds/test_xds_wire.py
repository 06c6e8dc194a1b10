"""gRPC's own xDS client, configured by the mesh's control plane (mesh-xds), on our edge's
channel: what each xDS feature does to calls, and a live push taking effect within 1 s.
Real grpc.aio servers on 127.0.0.1:0; skipped, naming `make peers`, without the binary."""

from __future__ import annotations

import asyncio
import math
import time
import urllib.error

import grpc
import grpc.aio
import pytest

from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc
from tests.integration.resilience.servers import Handler, ProfileFake, profile_servicer, serving
from tests.integration.xds.plane import Plane, listener_name, one_edge, xds_channel

pytestmark = pytest.mark.slow
PATH = "/mesh.v1.ProfileService/GetProfile"


async def outcome(stub: profile_pb2_grpc.ProfileServiceStub) -> grpc.StatusCode:
    try:
        await stub.GetProfile(profile_pb2.GetProfileRequest(user_id="u-1"), timeout=5)
    except grpc.aio.AioRpcError as err:
        return err.code()
    return grpc.StatusCode.OK


def sleeping(seconds: float) -> Handler:
    """A handler that holds each call `seconds`, then answers."""

    async def hold(request: profile_pb2.GetProfileRequest, context: object) -> None:
        await asyncio.sleep(seconds)

    return hold


async def seconds_until(
    stub: profile_pb2_grpc.ProfileServiceStub, code: grpc.StatusCode, limit_s: float = 5.0
) -> float:
    """How long until a call ends with `code` (one call every 5 ms, for at most limit_s)."""
    started = time.monotonic()
    for _ in range(int(limit_s / 0.005)):
        if await outcome(stub) == code:
            return time.monotonic() - started
        await asyncio.sleep(0.005)
    return math.inf


async def test_an_a33_abort_of_30_percent_fails_that_share_within_binomial_error(
    plane: Plane,
) -> None:
    fake, name, calls, share = ProfileFake(), listener_name(), 1000, 0.30
    async with serving(profile_servicer(fake)) as addr:
        fault = {"path": PATH, "abort_percent": share * 100, "abort_code": "UNAVAILABLE"}
        plane.put(one_edge(name, [addr], faults=[fault]))  # applied when it answers
        channel = xds_channel(name)
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        codes = [await outcome(stub) for _ in range(calls)]
        await channel.close()
    failed = codes.count(grpc.StatusCode.UNAVAILABLE)
    assert failed + codes.count(grpc.StatusCode.OK) == calls  # no other outcome
    four_sigma = 4 * math.sqrt(share * (1 - share) / calls)  # 0.058 for 1000 calls
    assert abs(failed / calls - share) <= four_sigma, f"{failed} of {calls} aborted"
    assert len(fake.arrivals_s) == calls - failed  # an aborted call never reaches the server


async def test_a_live_push_of_a_fault_changes_the_calls_within_one_second(
    plane: Plane,
) -> None:
    name = listener_name()
    async with serving(profile_servicer(ProfileFake())) as addr:
        healthy = one_edge(name, [addr])
        plane.put(healthy)  # applied when it answers
        channel = xds_channel(name)
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        assert await outcome(stub) == grpc.StatusCode.OK
        aborting = {"abort_percent": 100, "abort_code": "RESOURCE_EXHAUSTED"}
        plane.write(one_edge(name, [addr], faults=[aborting]))  # the file
        took_file_s = await seconds_until(stub, grpc.StatusCode.RESOURCE_EXHAUSTED)
        plane.put(healthy)  # the admin HTTP
        took_admin_s = await seconds_until(stub, grpc.StatusCode.OK)
        await channel.close()
    assert took_file_s < 1.0, f"the file's push took {took_file_s:.3f} s"
    assert took_admin_s < 1.0, f"the admin call's push took {took_admin_s:.3f} s"


async def test_xds_retry_runs_on_our_edge_channel_with_its_backoff(
    plane: Plane,
) -> None:
    """resilient_channel turns gRPC's retries off for every other target; for xds:/// the
    route's A44 retry_policy is the retry owner, so it must stay on."""

    async def fails_twice(
        request: profile_pb2.GetProfileRequest, context: grpc.aio.ServicerContext
    ) -> None:
        if len(fake.arrivals_s) <= 2:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "not yet")

    fake, name = ProfileFake(fails_twice), listener_name()
    retry = {
        "max_attempts": 3,
        "base_backoff_s": 0.05,
        "max_backoff_s": 0.05,
        "retryable_codes": ["UNAVAILABLE"],
    }
    async with serving(profile_servicer(fake)) as addr:
        plane.put(one_edge(name, [addr], retry=retry))  # applied when it answers
        channel = xds_channel(name)
        code = await outcome(profile_pb2_grpc.ProfileServiceStub(channel))
        await channel.close()
    assert code == grpc.StatusCode.OK
    assert len(fake.arrivals_s) == 3
    gaps = [b - a for a, b in zip(fake.arrivals_s, fake.arrivals_s[1:], strict=False)]
    assert all(gap > 0.0 for gap in gaps)  # jittered (0, 50 ms]: never all at once


async def test_a32_max_requests_refuses_by_concurrency_not_by_failures(
    plane: Plane,
) -> None:
    name = listener_name()
    async with serving(profile_servicer(ProfileFake(sleeping(0.3)))) as addr:
        plane.put(one_edge(name, [addr], max_requests=2))  # applied when it answers
        channel = xds_channel(name)
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        assert await outcome(stub) == grpc.StatusCode.OK  # resolved before the burst
        codes = await asyncio.gather(*(outcome(stub) for _ in range(10)))
        await channel.close()
    assert codes.count(grpc.StatusCode.OK) == 2
    assert codes.count(grpc.StatusCode.UNAVAILABLE) == 8


async def test_a31_timeout_ends_a_call_the_server_holds(
    plane: Plane,
) -> None:
    name = listener_name()
    async with serving(profile_servicer(ProfileFake(sleeping(2.0)))) as addr:
        plane.put(one_edge(name, [addr], timeout_s=0.2))  # applied when it answers
        channel = xds_channel(name)
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        started = time.monotonic()
        code = await outcome(stub)
        took_s = time.monotonic() - started
        await channel.close()
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert took_s < 1.5, f"{took_s:.2f} s: the route's 0.2 s, not the call's 5 s"


async def test_a_bad_config_is_refused_naming_the_field_and_the_last_good_one_keeps_serving(
    plane: Plane,
) -> None:
    name = listener_name()
    async with serving(profile_servicer(ProfileFake())) as addr:
        plane.put(one_edge(name, [addr]))
        channel = xds_channel(name)
        stub = profile_pb2_grpc.ProfileServiceStub(channel)
        assert await outcome(stub) == grpc.StatusCode.OK
        bad = one_edge(name, [addr], retry={"max_attempts": 9, "base_backoff_s": 0.1})
        with pytest.raises(urllib.error.HTTPError) as refused:
            plane.put(bad)
        body = refused.value.read().decode()
        assert refused.value.code == 400
        assert f"nodes.gateway.{name}: retry.max_attempts: 9 is not in [2, 5]" in body
        plane.write(bad)  # the file too: reported in the plane's log, not applied
        await asyncio.sleep(0.3)  # three polls
        assert await outcome(stub) == grpc.StatusCode.OK
        await channel.close()
