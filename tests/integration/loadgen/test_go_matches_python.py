"""The Go load generator (grpc_resilience_mesh/loadgen/go, `make peers`) and the Python one
(loadgen) send the same plans to the same fake gateway and report the same records, times aside: the
same requests (byte for byte, with the same metadata), codes, degraded parts, checkout status and
charge id, pushback and details, in open and closed loops, with client retries, dropped calls and a
stop in the middle of a load (or EOF); started_s on the runner's own perf_counter clock."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import grpc
import pytest

from grpc_aio_resilience.intake import TIMEOUT_KEY, timeout_value
from grpc_resilience_mesh.loadgen.generator import serialise
from grpc_resilience_mesh.loadgen.in_process import (
    LoadGenerator,
    LoadResult,
    Outcome,
    generator_command,
)
from grpc_resilience_mesh.loadgen.protocol import Plan, Request, decode
from grpc_resilience_mesh.services.v1 import gateway_pb2, payment_pb2
from tests.support.peers import peer_binary

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(90)]
Abort = tuple[grpc.StatusCode, str, str | None]  # code, details, pushback trailer
LONG = "é" * 200  # cut at 160 characters, not bytes
BEHAVIOUR: dict[str, list[Abort | None]] = {
    # user id: what each attempt meets (the last entry repeats); None is an answer.
    "u-0001": [None],
    "u-0002": [None],
    "u-0003": [(grpc.StatusCode.UNAVAILABLE, "restarting", "10"), None],
    "u-0004": [(grpc.StatusCode.RESOURCE_EXHAUSTED, "shed", "-1")],
    "u-0005": [(grpc.StatusCode.UNAVAILABLE, "down", "5")],
    "u-0006": [(grpc.StatusCode.INVALID_ARGUMENT, 'bad "user"\n\\ ü', None)],
    "u-0007": [(grpc.StatusCode.RESOURCE_EXHAUSTED, "no pushback", None), None],
    "u-0008": [(grpc.StatusCode.UNAVAILABLE, "garbled", "soon")],
    "u-0009": [(grpc.StatusCode.FAILED_PRECONDITION, LONG, None)],
    "u-0010": [None],
    "u-0011": [None],
    "u-0012": [(grpc.StatusCode.UNAVAILABLE, "", "0"), None],
}
DEGRADED = {"u-0001": [("recommendations", "popular"), ("profile", "omitted")]}
CHARGE = {
    "u-0010": payment_pb2.CHARGE_STATUS_SUCCEEDED,
    "u-0011": payment_pb2.CHARGE_STATUS_DECLINED,
    "u-0012": payment_pb2.CHARGE_STATUS_PENDING,
}


@dataclass
class FakeGateway:
    """Answers by user id (BEHAVIOUR), counting attempts per trace; records what it received.
    A user in `held` waits on its event (or forever) before answering."""

    address: str = ""
    received: list[tuple[str, bytes, str, str, str]] = field(default_factory=list)
    attempts: Counter[str] = field(default_factory=Counter)
    held: dict[str, asyncio.Event] = field(default_factory=dict)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def answer(
        self, request: bytes, context: grpc.aio.ServicerContext[bytes, bytes], rpc: str
    ) -> bytes:
        md = dict(context.invocation_metadata() or ())
        trace = str(md.get("traceparent", ""))
        auth, sent_timeout = str(md.get("authorization", "")), str(md.get(TIMEOUT_KEY, ""))
        self.received.append((rpc, request, auth, trace, sent_timeout))
        if rpc == "home":
            user = gateway_pb2.GetHomeRequest.FromString(request).user_id
        else:
            user = gateway_pb2.CheckoutRequest.FromString(request).user_id
        if user in self.held:
            self.arrived.set()
            await self.held[user].wait()
        plan = BEHAVIOUR.get(user, [None])
        attempt = self.attempts[trace]
        self.attempts[trace] += 1
        fault = plan[min(attempt, len(plan) - 1)]
        if fault is not None:
            code, details, pushback = fault
            fate = ("resilience-fate", f"failed-not-retryable({code.name})")
            if pushback is not None:
                context.set_trailing_metadata((("grpc-retry-pushback-ms", pushback), fate))
            else:
                context.set_trailing_metadata((fate,))
            await context.abort(code, details)
        context.set_trailing_metadata((("resilience-fate", f"ok-degraded(fake:{user})"),))
        if rpc == "home":
            home = gateway_pb2.GetHomeResponse()
            for part, served_by in DEGRADED.get(user, []):
                home.degraded.add(part=part, served_by=served_by, code="UNAVAILABLE")
            return bytes(home.SerializeToString())
        key = gateway_pb2.CheckoutRequest.FromString(request).idempotency_key
        out = gateway_pb2.CheckoutResponse(
            charge_id=f"ch-{key}", status=CHARGE.get(user, payment_pb2.CHARGE_STATUS_UNSPECIFIED)
        )
        return bytes(out.SerializeToString())


@pytest.fixture
async def gateway() -> AsyncIterator[FakeGateway]:
    fake = FakeGateway()

    def handler(rpc: str) -> grpc.RpcMethodHandler[bytes, bytes]:
        async def call(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
            return await fake.answer(request, context, rpc)

        return grpc.unary_unary_rpc_method_handler(call)

    generic = grpc.method_handlers_generic_handler(
        "mesh.v1.Gateway", {"GetHome": handler("home"), "Checkout": handler("checkout")}
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((generic,))
    fake.address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    await server.start()
    try:
        yield fake
    finally:
        for event in fake.held.values():
            event.set()
        await server.stop(None)


@pytest.fixture(autouse=True)
def go_built() -> None:
    peer_binary("mesh-loadgen")


def plan(address: str, users: list[int], **options: object) -> Plan:
    """A request per user (1..9 GetHome, 10.. Checkout), each with its own key and trace."""
    requests = [
        Request(
            "home" if n < 10 else "checkout",
            n,
            1000 + 7 * i if n >= 10 else 0,
            f"key-{i}" if n >= 10 else "",
            f"{i + 1:032x}",
            f"{i + 1:016x}",
        )
        for i, n in enumerate(users)
    ]
    return Plan(address, requests, **options)  # type: ignore[arg-type]


async def run(
    kind: str,
    monkeypatch: pytest.MonkeyPatch,
    plans: list[Plan],
    on_outcome: Callable[[Outcome], None] | None = None,
    stop: asyncio.Event | None = None,
) -> list[LoadResult]:
    """Every plan through one generator process of `kind`, one after another."""
    monkeypatch.setenv("MESH_LOADGEN", kind)
    generator = LoadGenerator()
    results = []
    try:
        for one in plans:
            results.append(await generator.run(one, on_outcome, stop))
    finally:
        await generator.close()
    assert generator.kind == kind
    return results


def timeless(result: LoadResult) -> list[tuple[object, ...]]:
    """Each outcome but its times, by request."""
    return sorted(
        (
            o.trace_id,
            o.rpc,
            o.code,
            o.degraded,
            o.status,
            o.charge_id,
            o.pushback_ms,
            o.detail,
            o.fate,
        )
        for o in result.outcomes
    )


USERS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] * 2


async def test_closed_loop_with_client_retries_reports_alike(
    gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = plan(gateway.address, USERS, concurrency=3, client_retries=2, api_key="k1")
    before = time.perf_counter()
    over_at_once = plan(gateway.address, [1], max_duration_s=0.0)
    py, empty_py = await run("python", monkeypatch, [base, over_at_once])
    sent_by_python = sorted(gateway.received)
    gateway.received.clear()
    gateway.attempts.clear()
    go, empty_go = await run("go", monkeypatch, [base, over_at_once])
    after = time.perf_counter()

    assert timeless(go) == timeless(py)
    assert len(go.outcomes) == len(USERS)
    by_user = {r.trace_id: r.user for r in base.requests}
    outcome = {by_user[o.trace_id]: o for o in go.outcomes}
    assert outcome[1].degraded == ("recommendations:popular", "profile:omitted")
    assert (outcome[3].code, outcome[7].code, outcome[12].code) == ("OK", "OK", "OK")
    assert (outcome[10].status, outcome[11].status, outcome[12].status) == (
        "SUCCEEDED",
        "DECLINED",
        "PENDING",
    )
    assert outcome[10].charge_id == f"ch-{outcome[10].key}"
    assert (outcome[4].code, outcome[4].pushback_ms) == ("RESOURCE_EXHAUSTED", -1)
    assert (outcome[5].code, outcome[5].pushback_ms) == ("UNAVAILABLE", 5)
    assert (outcome[8].pushback_ms, outcome[6].detail) == (-1, 'bad "user"\n\\ ü')
    assert outcome[9].detail == "é" * 160
    # The fate each answer's resilience-fate trailer carried, on success and on failure.
    assert (outcome[3].fate, outcome[12].fate) == (
        "ok-degraded(fake:u-0003)",
        "ok-degraded(fake:u-0012)",
    )
    assert outcome[4].fate == "failed-not-retryable(RESOURCE_EXHAUSTED)"
    # Retries waited for the pushback (0 and absent: 0.2 s), timed from the first try.
    assert outcome[7].latency_s >= 0.2 and outcome[12].latency_s >= 0.2
    assert outcome[5].latency_s >= 0.01
    # The same requests on the wire, byte for byte, with the same metadata; 3 tries at most.
    assert sorted(gateway.received) == sent_by_python
    assert {body for _, body, *_ in gateway.received} == {serialise(r) for r in base.requests}
    assert {auth for _, _, auth, *_ in gateway.received} == {"Bearer k1"}
    # Every try carries its deadline for the server's intake gate, as the mesh's clients do.
    assert {sent for *_, sent in gateway.received} == {timeout_value(base.timeout_s)}
    assert max(gateway.attempts.values()) == 3 and gateway.attempts.total() == len(sent_by_python)
    # started_s is on this process's perf_counter clock.
    assert all(before <= o.started_s <= after for o in go.outcomes)
    assert go.generator_cpu_s is not None and py.generator_cpu_s is not None
    assert empty_go.outcomes == [] and empty_py.outcomes == []


async def test_open_loop_keeps_its_schedule_and_drops_when_every_slot_is_busy(
    gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 40
    steady = plan(gateway.address, [1, 2, 10, 11] * (n // 4), concurrency=n, rate_per_s=200.0)
    # One slot, held by the first call until the four calls due after it have been dropped.
    gateway.held["u-0020"] = release = asyncio.Event()
    full = plan(gateway.address, [20, 1, 1, 1, 1], concurrency=1, rate_per_s=20.0, batch_s=0.05)
    dropped: list[str] = []

    def on_outcome(outcome: Outcome) -> None:
        dropped.append(outcome.code)
        if dropped.count("CLIENT_DROPPED") == 4:
            release.set()

    results = {}
    for kind in ("python", "go"):
        dropped.clear()
        release.clear()
        results[kind] = await run(kind, monkeypatch, [steady, full], on_outcome)
    (py_steady, py_full), (go_steady, go_full) = results["python"], results["go"]

    assert timeless(go_steady) == timeless(py_steady)
    assert [o.code for o in go_steady.outcomes] == ["OK"] * n
    starts = sorted(o.started_s for o in go_steady.outcomes)
    assert 0.8 * (n - 1) / 200.0 <= starts[-1] - starts[0] < 5  # a schedule, not a burst
    assert timeless(go_full) == timeless(py_full)
    assert sorted(o.code for o in go_full.outcomes) == ["CLIENT_DROPPED"] * 4 + ["OK"]
    assert [o.status for o in go_full.outcomes if o.code == "OK"] == ["UNSPECIFIED"]


async def test_stop_ends_the_load_and_the_next_plan_runs(
    gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Closed loop, one worker: the fourth call never answers; the test stops the load as soon
    # as it arrives, so it ends on its 2 s deadline and no fifth call is sent.
    gateway.held["u-0005"] = asyncio.Event()
    stopped = plan(gateway.address, [1, 2, 11, 5, 1, 1, 1, 1], timeout_s=2.0)
    after = plan(gateway.address, [1, 10])
    results = {}
    for kind in ("python", "go"):
        gateway.arrived.clear()
        gateway.attempts.clear()
        stop = asyncio.Event()

        async def stop_on_arrival(stop: asyncio.Event = stop) -> None:
            await gateway.arrived.wait()
            stop.set()

        stopper = asyncio.create_task(stop_on_arrival())
        monkeypatch.setenv("MESH_LOADGEN", kind)
        generator = LoadGenerator()
        try:
            first = await generator.run(stopped, stop=stop)
            second = await generator.run(after)
        finally:
            stopper.cancel()
            await generator.close()
        results[kind] = (first, second)

    (py_first, py_second), (go_first, go_second) = results["python"], results["go"]
    assert timeless(go_first) == timeless(py_first)
    assert [o.code for o in sorted(go_first.outcomes, key=lambda o: o.started_s)] == [
        "OK",
        "OK",
        "OK",
        "DEADLINE_EXCEEDED",
    ]
    assert timeless(go_second) == timeless(py_second)
    assert [o.code for o in go_second.outcomes if o.rpc == "checkout"] == ["OK"]


async def test_closing_stdin_ends_the_load_and_the_process(
    gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    long = plan(gateway.address, [1] * 1000, concurrency=4, rate_per_s=20.0, batch_s=0.05)
    for kind in ("python", "go"):
        gateway.attempts.clear()
        monkeypatch.setenv("MESH_LOADGEN", kind)
        _, command = generator_command()
        proc = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(long.dumps().encode() + b"\n")
        await proc.stdin.drain()
        try:
            first = await asyncio.wait_for(proc.stdout.readline(), timeout=20)
            assert first.startswith(b"R [[0,"), first[:80]
            proc.stdin.close()  # EOF: the runner is gone, or wants the load to end
            rest = await asyncio.wait_for(proc.stdout.read(), timeout=20)
            assert await asyncio.wait_for(proc.wait(), timeout=20) == 0
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        kind_, end = decode(rest.decode().splitlines()[-1])
        assert kind_ == "E" and end["elapsed_s"] < 15  # not the 50 s the plan would take


async def test_a_plan_sent_while_the_last_one_runs_waits_its_turn(
    gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both plans on stdin at once: the second line arrives while the first plan runs, as it
    # can when the runner sends the next plan the moment an end line is out and the plan is
    # still closing. It must neither stop the first plan nor be lost (the console's steady
    # load stalled after its second plan that way: 40 calls, then none).
    first, second = plan(gateway.address, [1, 2, 3]), plan(gateway.address, [4, 5])
    for kind in ("python", "go"):
        gateway.attempts.clear()
        monkeypatch.setenv("MESH_LOADGEN", kind)
        _, command = generator_command()
        proc = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(f"{first.dumps()}\n{second.dumps()}\n".encode())
        await proc.stdin.drain()
        ends, records = 0, 0
        try:
            async with asyncio.timeout(20):
                while ends < 2:
                    line = await proc.stdout.readline()
                    assert line, f"{kind}: the generator exited after {ends} plan(s)"
                    what, body = decode(line.decode())
                    if what == "E":
                        ends += 1
                    else:
                        records += len(body)
        finally:
            proc.stdin.close()
            await proc.wait()
        assert records == 5, kind
        assert sum(gateway.attempts.values()) == 5, kind  # both plans reached the gateway
