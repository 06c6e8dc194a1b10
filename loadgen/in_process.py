"""Bounded load through the gateway: a fixed number of requests at a fixed concurrency."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import os
import secrets
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from loadgen.protocol import Plan, Request, decode
from mesh.customers import USER_COUNT, user_id
from mesh.resilience.classify import RETRYABLE_CODES, pushback_s
from mesh.v1 import gateway_pb2, gateway_pb2_grpc, payment_pb2


@dataclass(frozen=True)
class Outcome:
    """One request as the user saw it."""

    rpc: str
    code: str
    latency_s: float
    degraded: tuple[str, ...] = ()
    status: str = ""
    charge_id: str = ""
    key: str = ""
    started_s: float = 0.0
    pushback_ms: int | None = None
    """The grpc-retry-pushback-ms trailer of a failed call, if it had one."""
    trace_id: str = ""
    """The W3C trace id this request was sent with: `mesh traces TRACE_ID` shows its story."""
    detail: str = ""
    """The status details of a failed call (truncated)."""


def traced(md: tuple[tuple[str, str], ...]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A fresh sampled W3C traceparent for one request, so the report can name its trace."""
    trace_id = secrets.token_hex(16)
    return trace_id, (*md, ("traceparent", f"00-{trace_id}-{secrets.token_hex(8)}-01"))


def _pushback(err: grpc.aio.AioRpcError) -> int | None:
    """The server's pushback in ms (-1: do not retry), read as the retry layer reads it."""
    pushback = pushback_s(err.trailing_metadata())
    if pushback is None:
        return None
    return -1 if pushback < 0 else round(pushback * 1000)


@dataclass
class LoadResult:
    """Every outcome of one load run, and its wall time."""

    outcomes: list[Outcome] = field(default_factory=list)
    elapsed_s: float = 0.0
    generator_cpu_s: float | None = None
    """The load generator process's own CPU (utime+stime) over the load; None in-process."""
    mesh_cpu_s: float | None = None
    """The mesh's CPU (its services' and Toxiproxy's utime+stime) over the same load; None
    for a mesh this process did not start."""
    offered_per_s: float | None = None
    """The open-loop rate the load was offered at (None: closed loop)."""
    process_cpu_s: dict[str, float] = field(default_factory=dict)
    """Each mesh process's CPU over the load, by name (empty when mesh_cpu_s is None)."""

    def add_cpu(self, generator_s: float | None, by_process: dict[str, float] | None) -> None:
        """Count one more part (a wave) of this load's CPU; unknown stays unknown."""
        if generator_s is not None:
            self.generator_cpu_s = (self.generator_cpu_s or 0.0) + generator_s
        if by_process is None:
            self.mesh_cpu_s = None
            self.process_cpu_s = {}
            return
        self.mesh_cpu_s = (self.mesh_cpu_s or 0.0) + sum(by_process.values())
        for name, used in by_process.items():
            self.process_cpu_s[name] = self.process_cpu_s.get(name, 0.0) + used

    def busy(self, process: str) -> float | None:
        """`process`'s CPU seconds per second of this load: a single-threaded event loop
        near 1.0 is saturated, and calls queue in front of it."""
        used = self.process_cpu_s.get(process)
        return None if used is None or self.elapsed_s <= 0 else used / self.elapsed_s

    def cpu_metrics(self) -> dict[str, float]:
        """CPU per request of the generator and of the mesh, and the generator's share."""
        n = len(self.outcomes)
        out: dict[str, float] = {}
        if self.generator_cpu_s is not None and n:
            out["generator_cpu_ms_per_req"] = self.generator_cpu_s * 1000 / n
        if self.mesh_cpu_s is not None and n:
            out["mesh_cpu_ms_per_req"] = self.mesh_cpu_s * 1000 / n
        if self.generator_cpu_s is not None and self.mesh_cpu_s:
            out["generator_cpu_share"] = self.generator_cpu_s / self.mesh_cpu_s
        return out

    def codes(self) -> Counter[str]:
        return Counter(o.code for o in self.outcomes)

    def latency_ms(self, q: float) -> float:
        return percentile([o.latency_s * 1000 for o in self.outcomes], q)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100): the smallest value with at least q% of the
    values at or below it, so always a value some request really had (never interpolated,
    never beyond the slowest); 0.0 for no values. The chaos package's one definition
    (tests/unit/chaos/test_measure.py pins it)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q * len(ordered) / 100)))
    return ordered[rank - 1]


def metadata_for(api_key: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {api_key}"),) if api_key else ()


async def _home(
    stub: gateway_pb2_grpc.GatewayStub, n: int, timeout_s: float, md: tuple[tuple[str, str], ...]
) -> Outcome:
    trace_id, md = traced(md)
    start = time.perf_counter()
    try:
        reply = await stub.GetHome(
            gateway_pb2.GetHomeRequest(user_id=user_id(n % USER_COUNT + 1)),
            timeout=timeout_s,
            metadata=md,
        )
        degraded = tuple(f"{d.part}:{d.served_by}" for d in reply.degraded)
        return Outcome(
            "home", "OK", time.perf_counter() - start, degraded, started_s=start, trace_id=trace_id
        )
    except grpc.aio.AioRpcError as err:
        return Outcome(
            "home",
            err.code().name,
            time.perf_counter() - start,
            started_s=start,
            pushback_ms=_pushback(err),
            trace_id=trace_id,
            detail=(err.details() or "")[:160],
        )


async def _checkout(
    stub: gateway_pb2_grpc.GatewayStub,
    n: int,
    timeout_s: float,
    md: tuple[tuple[str, str], ...],
    key: str = "",
) -> Outcome:
    key = key or f"load-{uuid.uuid4().hex}"
    trace_id, md = traced(md)
    start = time.perf_counter()
    try:
        reply = await stub.Checkout(
            gateway_pb2.CheckoutRequest(
                user_id=user_id(n % USER_COUNT + 1),
                amount_cents=1000 + n % 500,
                currency="USD",
                idempotency_key=key,
            ),
            timeout=timeout_s,
            metadata=md,
        )
        status = payment_pb2.ChargeStatus.Name(reply.status).removeprefix("CHARGE_STATUS_")
        return Outcome(
            "checkout",
            "OK",
            time.perf_counter() - start,
            status=status,
            charge_id=reply.charge_id,
            key=key,
            started_s=start,
            trace_id=trace_id,
        )
    except grpc.aio.AioRpcError as err:
        return Outcome(
            "checkout",
            err.code().name,
            time.perf_counter() - start,
            key=key,
            started_s=start,
            pushback_ms=_pushback(err),
            trace_id=trace_id,
            detail=(err.details() or "")[:160],
        )


RPCS = {"home": _home, "checkout": _checkout}
RETRYABLE = frozenset(code.name for code in RETRYABLE_CODES)  # the mesh's one definition


async def _with_client_retries(
    stub: gateway_pb2_grpc.GatewayStub,
    rpc: str,
    n: int,
    timeout_s: float,
    md: tuple[tuple[str, str], ...],
    retries: int,
) -> Outcome:
    """A well-behaved client: retries a refused call after the server's pushback (or 0.2 s),
    a checkout with the same idempotency key; gives up on a pushback of -1."""
    first = await RPCS[rpc](stub, n, timeout_s, md)
    outcome = first
    for _ in range(retries):
        if outcome.code not in RETRYABLE or (outcome.pushback_ms or 0) < 0:
            break
        await asyncio.sleep((outcome.pushback_ms or 200) / 1000)
        if rpc == "checkout":
            outcome = await _checkout(stub, n, timeout_s, md, key=first.key)
        else:
            outcome = await RPCS[rpc](stub, n, timeout_s, md)
    if outcome is first:
        return first
    total_s = outcome.started_s + outcome.latency_s - first.started_s
    return Outcome(
        rpc,
        outcome.code,
        total_s,
        outcome.degraded,
        outcome.status,
        outcome.charge_id,
        first.key or outcome.key,
        first.started_s,
        outcome.pushback_ms,
        outcome.trace_id,
        outcome.detail,
    )


async def run_load(
    gateway: str,
    *,
    requests: int,
    concurrency: int,
    rpc_mix: Sequence[str] = ("home",),
    timeout_s: float = 2.0,
    think_s: float = 0.0,
    max_duration_s: float = 120.0,
    rate_per_s: float | None = None,
    api_key: str | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
    stop: asyncio.Event | None = None,
    client_retries: int = 0,
) -> LoadResult:
    """Send `requests` calls and return every outcome.

    Closed loop (default): `concurrency` workers, each sending its next call when the last
    answered (plus `think_s`). Open loop (`rate_per_s`): calls start on a fixed schedule
    whatever the answers, at most `concurrency` in flight; a call that finds no free slot
    is recorded as CLIENT_DROPPED. Stops early at `max_duration_s` or when `stop` is set.
    """
    result = LoadResult()
    counter = itertools.count()
    md = metadata_for(api_key)
    start = time.perf_counter()

    def done(outcome: Outcome) -> None:
        result.outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    def over(n: int) -> bool:
        return (
            n >= requests
            or time.perf_counter() - start > max_duration_s
            or (stop is not None and stop.is_set())
        )

    async with grpc.aio.insecure_channel(gateway) as channel:
        stub = gateway_pb2_grpc.GatewayStub(channel)

        async def one(n: int) -> None:
            rpc = rpc_mix[n % len(rpc_mix)]
            if client_retries:
                done(await _with_client_retries(stub, rpc, n, timeout_s, md, client_retries))
            else:
                done(await RPCS[rpc](stub, n, timeout_s, md))

        async def worker() -> None:
            while not over(n := next(counter)):
                await one(n)
                if think_s:
                    await asyncio.sleep(think_s)

        if rate_per_s is None:
            await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
        else:
            slots = asyncio.Semaphore(concurrency)
            tasks: list[asyncio.Task[None]] = []

            async def gated(n: int) -> None:
                async with slots:
                    await one(n)

            for n in range(requests):
                if over(n):
                    break
                delay = start + n / rate_per_s - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                if slots.locked():
                    done(
                        Outcome(
                            rpc_mix[n % len(rpc_mix)],
                            "CLIENT_DROPPED",
                            0.0,
                            started_s=time.perf_counter(),
                        )
                    )
                    continue
                tasks.append(asyncio.create_task(gated(n)))
            await asyncio.gather(*tasks)
    result.elapsed_s = time.perf_counter() - start
    return result


def plan_for(
    gateway: str, requests: int, rpc_mix: Sequence[str] = ("home",), **options: Any
) -> Plan:
    """The generator's plan: every request's RPC, user, key and trace id chosen here; the
    `options` are the Plan's (concurrency, rate_per_s, think_s, timeout_s, ...)."""
    chosen = []
    for n in range(requests):
        rpc = rpc_mix[n % len(rpc_mix)]
        chosen.append(
            Request(
                rpc,
                n % USER_COUNT + 1,
                1000 + n % 500,
                f"load-{uuid.uuid4().hex}" if rpc == "checkout" else "",
                secrets.token_hex(16),
                secrets.token_hex(8),
            )
        )
    return Plan(gateway, chosen, **options)


def outcome_of(plan: Plan, record: Sequence[object]) -> Outcome:
    """A generator record (loadgen/protocol.py RECORD_FIELDS) as the user saw it."""
    index, started, latency, code, degraded, status, charge_id, pushback, detail = record
    request = plan.requests[int(index)]  # type: ignore[call-overload]
    return Outcome(
        request.rpc,
        str(code),
        float(latency),  # type: ignore[arg-type]
        tuple(str(degraded).split(",")) if degraded else (),
        str(status),
        str(charge_id),
        request.key,
        float(started),  # type: ignore[arg-type]
        None if pushback is None else int(pushback),  # type: ignore[call-overload]
        request.trace_id,
        str(detail),
    )


GO_GENERATOR = Path(__file__).resolve().parents[1] / ".peers" / "bin" / "mesh-loadgen"
"""The Go generator (loadgen/go, built by `make peers`): the same protocol at a fraction
of the Python one's CPU per call."""


class LoadGeneratorError(ValueError):
    """MESH_LOADGEN names no generator, or one that is not built."""


def generator_command(environ: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """("go" or "python", its command): `MESH_LOADGEN=python|go` forces one; by default the
    Go generator when it is built, else the Python one."""
    env = os.environ if environ is None else environ
    wanted = env.get("MESH_LOADGEN", "")
    built = os.access(GO_GENERATOR, os.X_OK)
    if wanted not in ("", "python", "go"):
        raise LoadGeneratorError(f"MESH_LOADGEN={wanted}: expected python or go")
    if wanted == "python" or (wanted == "" and not built):
        return "python", [sys.executable, "-m", "loadgen.generator"]
    if not built:
        raise LoadGeneratorError(f"MESH_LOADGEN=go: no {GO_GENERATOR}; run `make peers`")
    return "go", [str(GO_GENERATOR)]


class LoadGenerator:
    """The load generator process (loadgen/go's Go one when built, else loadgen/
    generator.py; generator_command), started once and reused for every load of a run: its
    CPU is its own and measured, and no load pays its start-up."""

    def __init__(self) -> None:
        self._proc: asyncio.subprocess.Process | None = None
        self.kind: str | None = None
        """Which generator ran ("go" or "python"); None before the first load."""

    async def _started(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            self.kind, command = generator_command()
            self._proc = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=2**26,
            )
        return self._proc

    async def run(
        self,
        plan: Plan,
        on_outcome: Callable[[Outcome], None] | None = None,
        stop: asyncio.Event | None = None,
    ) -> LoadResult:
        """Send `plan`; outcomes stream back as they finish; `stop` ends the load early."""
        proc = await self._started()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(plan.dumps().encode() + b"\n")
        await proc.stdin.drain()
        result = LoadResult()

        async def stopper() -> None:
            assert stop is not None and proc.stdin is not None
            await stop.wait()
            with contextlib.suppress(ConnectionError):
                proc.stdin.write(b"stop\n")
                await proc.stdin.drain()

        watcher = asyncio.create_task(stopper()) if stop is not None else None
        ended = False
        try:
            async for line in proc.stdout:
                kind, body = decode(line.decode())
                if kind == "E":
                    result.elapsed_s = float(body["elapsed_s"])
                    result.generator_cpu_s = body["cpu_s"]
                    ended = True
                    break
                for record in body:
                    outcome = outcome_of(plan, record)
                    result.outcomes.append(outcome)
                    if on_outcome is not None:
                        on_outcome(outcome)
        finally:
            if watcher is not None:
                watcher.cancel()
            if not ended:
                await self.close()
        if not ended:
            raise RuntimeError("the load generator exited before the end of its load")
        return result

    async def close(self) -> None:
        """End the process (closing its stdin ends it; killed if it does not)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(ConnectionError):
                proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout=5)
        except TimeoutError:
            proc.kill()
            await proc.wait()
