"""The GetHome route docs/architecture.md lists is the set of product files one real GetHome
crosses: one call through the real gateway, recommendation and profile (serve(), in this
process), traced on every thread, with tracing off and with trace files on."""

from __future__ import annotations

from pathlib import Path

import grpc.aio
import pytest

from grpc_aio_resilience.fates import seen_by_caller
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc
from tests.integration.hardening.inproc_services import serving
from tests.support.call_trace import CallTrace, installed
from tests.support.doc_routes import differences, get_home_route
from tests.support.polling import await_until

SERVICES = ("gateway", "recommendation", "profile")
SPAN_WRITER = "mesh-span-writer"
"""The thread that writes a service's trace file (jsonl_exporter): the call's spans are its work,
though its timer, not the call, decides when. The services' other threads are not the call's."""
TRIES = 5
"""Calls measured at most until one ends `ok` (answered, first try, whole): on a busy machine an
attempt may time out, and a retry's route is not GetHome's."""


def _lines(traces: Path | None) -> dict[str, int]:
    if traces is None:
        return {}
    files = {name: traces / f"{name}.jsonl" for name in SERVICES}
    return {n: len(f.read_bytes().splitlines()) if f.exists() else 0 for n, f in files.items()}


async def crossed_by_one_get_home(env: dict[str, str], traces: Path | None) -> list[str]:
    """The files one clean GetHome crosses, after one warm-up call; with `traces`, until the
    writer thread has put the call's spans of every service in their files."""
    request = gateway_pb2.GetHomeRequest(user_id="u-0001", limit=3)
    fates: list[str] = []
    with installed(CallTrace()) as trace:
        async with serving(env={"MESH_AUTH": "off", "MESH_POLICY": "full", **env}) as served:
            async with grpc.aio.insecure_channel(served.listen["gateway"]) as channel:
                stub = gateway_pb2_grpc.GatewayStub(channel)
                await stub.GetHome(request)  # warm: the popular cache, first connections

                async def one_get_home() -> None:
                    before = _lines(traces)
                    call = stub.GetHome(request)
                    reply = await call
                    assert reply.profile.user_id == "u-0001"
                    trailers = await call.trailing_metadata()
                    fates.append(
                        "degraded" if reply.degraded else seen_by_caller("OK", trailers, "")
                    )

                    async def written() -> bool:
                        return all(n > before[s] for s, n in _lines(traces).items())

                    await await_until(written, timeout_s=15.0, what="the call's spans written")

                for _ in range(TRIES):
                    files = await trace.run(one_get_home, threads=[SPAN_WRITER])
                    if fates[-1] == "ok":
                        return files
    raise AssertionError(f"no GetHome of {TRIES} ended ok: {fates}")


@pytest.mark.parametrize("trace_files", [False, True], ids=["tracing-off", "trace-files-on"])
async def test_the_page_lists_exactly_the_files_a_get_home_crosses(
    trace_files: bool, tmp_path: Path
) -> None:
    traces = tmp_path / "traces" if trace_files else None
    env = {"MESH_TRACING": "1", "MESH_TRACES_DIR": str(traces)} if traces else {}
    measured = await crossed_by_one_get_home(env, traces)
    route = get_home_route()
    claimed = route.with_trace_files if trace_files else route.tracing_off
    name = "GetHome, " + ("trace files on" if trace_files else "tracing off")
    print(f"{name}: {len(measured)} product files crossed")
    problem = differences(name, claimed, measured)
    assert not problem, problem
    assert "grpc_resilience_mesh/services/profile/servicer.py" in measured  # it reached profile
