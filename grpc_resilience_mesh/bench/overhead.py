"""Overhead of the resilience layer (and of tracing): raw grpc.aio vs the full stack.

Every server runs in this process (the fake ProfileService returns a fixed profile); rounds
alternate the variants, in reverse order every other round, so drift on a shared machine hits
all alike. Besides latency and throughput each variant reports the event loop's own CPU time
per call: the loop thread is the bottleneck, and its CPU per call moves less between runs than
wall-clock figures do. Objects alive after set-up are frozen out of the collector's reach, as
a service process freezes its start-up objects.
Run: python -m grpc_resilience_mesh.bench.overhead [--tracing] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
from opentelemetry.sdk.trace import TracerProvider

from grpc_aio_resilience import (
    NO_BUILTIN_RETRIES,
    EventBus,
    ResilienceInterceptor,
    ServerChain,
    ServerLayer,
    SystemClock,
    build_pipeline,
    protect_server,
    resilient_channel,
)
from grpc_resilience_mesh.bench.encoding_exporter import EncodingExporter, encoding_provider
from grpc_resilience_mesh.bench.floor import NoopClientInterceptor, NoopServerInterceptor
from grpc_resilience_mesh.bench.hand_composed import HandComposedStub
from grpc_resilience_mesh.bench.overhead_figures import differences, with_ratios
from grpc_resilience_mesh.loadgen.percentile import percentile
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.policy.loading import load_policy
from grpc_resilience_mesh.services.runtime.collector import freeze_startup_objects
from grpc_resilience_mesh.services.runtime.edge_channels import close_edge_channel
from grpc_resilience_mesh.services.runtime.server_chain import server_layers
from grpc_resilience_mesh.services.telemetry.tracing import (
    MeshTracing,
    server_tracing,
    setup_tracing,
)
from grpc_resilience_mesh.services.v1 import profile_pb2, profile_pb2_grpc

_PROFILE = profile_pb2.GetProfileResponse(
    profile=profile_pb2.Profile(user_id="u1", display_name="Ada", interests=["books", "tea"])
)
_REQUEST = profile_pb2.GetProfileRequest(user_id="u1")


class FixedProfile(profile_pb2_grpc.ProfileServiceServicer):
    async def GetProfile(self, request: Any, context: Any) -> profile_pb2.GetProfileResponse:
        return _PROFILE


async def _start(
    interceptors: list[grpc.aio.ServerInterceptor], layers: Sequence[ServerLayer] = ()
) -> tuple[grpc.aio.Server, str]:
    """A profile server: behind `interceptors`, and behind `layers` mounted as serve() mounts
    them (protect_server)."""
    server = grpc.aio.server(interceptors=interceptors)
    if layers:
        server = protect_server(server, layers)
    profile_pb2_grpc.add_ProfileServiceServicer_to_server(FixedProfile(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


async def timed_round(
    stub: Any, calls: int, concurrency: int
) -> tuple[list[float], float, float, float]:
    """Runs `calls` calls, `concurrency` at a time: (latencies, wall seconds, loop-thread CPU
    seconds, process CPU seconds: gRPC's own threads too)."""
    latencies_s: list[float] = []
    remaining = calls

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            started = time.perf_counter()
            await stub.GetProfile(_REQUEST, timeout=5.0)
            latencies_s.append(time.perf_counter() - started)

    started = time.perf_counter()
    cpu_started = time.thread_time()
    process_started = time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return (
        latencies_s,
        time.perf_counter() - started,
        time.thread_time() - cpu_started,
        time.process_time() - process_started,
    )


def _summary(
    latencies_s: list[float], elapsed_s: float, cpu_s: float, process_s: float
) -> dict[str, float]:
    return {
        "p50_ms": percentile(latencies_s, 50) * 1000,
        "p99_ms": percentile(latencies_s, 99) * 1000,
        "throughput_rps": len(latencies_s) / elapsed_s,
        "loop_cpu_us_per_call": cpu_s / len(latencies_s) * 1e6,
        "process_cpu_us_per_call": process_s / len(latencies_s) * 1e6,
    }


def _bench_edge(concurrency: int) -> tuple[Any, Any]:
    """The full policy and its gateway -> profile edge, sized for the bench."""
    policy = load_policy("full", {})
    # Bulkhead sized to the offered concurrency: the bench measures cost, not rejections.
    edge = policy.edge("gateway_to_profile")
    # Deadlines as long as the caller's 5 s: a stall on a busy machine must not end the run.
    edge = replace(
        edge,
        bulkhead=replace(edge.bulkhead, max_concurrent=concurrency),
        deadline=replace(edge.deadline, total_s=5.0, attempt_s=5.0),
    )
    return policy, edge


class _Variants:
    """Every variant's servers and client channel, in this process; `close` stops them all."""

    def __init__(self, concurrency: int) -> None:
        self.policy, self.edge = _bench_edge(concurrency)
        self.servers: list[grpc.aio.Server] = []
        self.channels: dict[str, grpc.aio.Channel] = {}
        self.stubs: dict[str, Any] = {}  # callers other than a channel's plain stub
        self.providers: list[TracerProvider] = []
        self.exporters: dict[str, EncodingExporter] = {}
        self.traces_dir = Path(tempfile.mkdtemp(prefix="mesh-bench-traces-"))

    async def plain(
        self,
        name: str,
        server_interceptors: list[grpc.aio.ServerInterceptor],
        client_interceptors: Sequence[Any] = (),
    ) -> None:
        server, target = await _start(server_interceptors)
        self.servers.append(server)
        self.channels[name] = grpc.aio.insecure_channel(
            target, options=[NO_BUILTIN_RETRIES], interceptors=list(client_interceptors) or None
        )

    async def full_stack(
        self,
        name: str,
        tracing_on: MeshTracing | None,
        replicas: int = 1,
        ejection: bool = True,
        *,
        client: bool = True,
        server: bool = True,
        layered: bool = False,
        intercepted: bool = False,
        server_intercepted: bool = False,
    ) -> None:
        """Our server chain behind our client pipeline; without one side, plain grpc.aio.
        `layered`: the pipeline runs through its chain of layers, not fused
        (grpc_aio_resilience.fused): a wire equal to its own but not the same object.
        `intercepted`: through grpc.aio's interceptor API (a channel built by hand), not the
        channel `resilient_channel` makes (grpc_aio_resilience.direct).
        `server_intercepted`: the server chain as one grpc.aio interceptor (ServerChain), not
        mounted past the interceptor API as serve() mounts it (protect_server)."""
        bus = EventBus()
        if tracing_on is not None:
            bus.subscribe(tracing_on.listener)
        layers = self._layers(bus, tracing_on) if server else []
        targets = [await self._server(layers, server_intercepted) for _ in range(replicas)]
        if not client:
            self.channels[name] = grpc.aio.insecure_channel(
                targets[0], options=[NO_BUILTIN_RETRIES]
            )
            return
        pipeline = build_pipeline(
            self.edge,
            dependency="profile",
            bus=bus,
            clock=SystemClock(),
            attempt_observer=tracing_on.attempt_observer if tracing_on else None,
            call_observer=tracing_on.call_observer if tracing_on else None,
            # As the mesh's edges build it (grpc_resilience_mesh.services.runtime.edges): the
            # deadline header only where the server has an intake gate to read it.
            wait_header=server and self.policy.server("profile").intake.discipline != "none",
        )
        if layered:
            pipeline = pipeline.with_wire(partial(pipeline.wire))
        interceptor = ResilienceInterceptor(pipeline, dependency="profile", clock=SystemClock())
        if intercepted:
            self.channels[name] = grpc.aio.insecure_channel(
                targets[0], options=[NO_BUILTIN_RETRIES], interceptors=[interceptor]
            )
            return
        self.channels[name] = resilient_channel(
            ",".join(targets),
            interceptor,
            native_retry=self.edge.native_retry,
            outlier=replace(self.edge.outlier, enabled=ejection),
            bus=bus,
            dependency="profile",
        )

    async def _server(self, layers: list[ServerLayer], intercepted: bool) -> str:
        """A started profile server behind `layers`: as serve() mounts them, or `intercepted`
        as one grpc.aio interceptor."""
        started, target = await (
            _start([ServerChain(layers)]) if intercepted else _start([], layers)
        )
        self.servers.append(started)
        return target

    def _layers(self, bus: EventBus, tracing_on: MeshTracing | None) -> list[ServerLayer]:
        return server_layers(
            "profile",
            self.policy.server("profile"),
            bus,
            FaultTable(),
            tracing=server_tracing(tracing_on),
        )

    async def hand_composed(self, name: str) -> None:
        """The same edge's client job by hand over plain grpc.aio
        (grpc_resilience_mesh.bench.hand_composed)."""
        await self.plain(name, [])
        stub = profile_pb2_grpc.ProfileServiceStub(self.channels[name])
        self.stubs[name] = HandComposedStub(stub, self.edge)

    async def traced(self) -> None:
        """Our spans exported two ways, and the stock OTel interceptors on raw grpc.aio."""
        # A dev dependency: imported only when asked for.
        from opentelemetry.instrumentation.grpc import (
            aio_client_interceptors,
            aio_server_interceptor,
        )

        provider, self.exporters["full+tracing"] = encoding_provider("bench-mesh")
        self.providers.append(provider)
        await self.full_stack("full+tracing", MeshTracing(provider))
        # The shipped default: JSON lines encoded as spans end, written by a thread.
        file_provider = setup_tracing("bench-file", {"MESH_TRACES_DIR": str(self.traces_dir)})
        assert file_provider is not None
        self.providers.append(file_provider)
        await self.full_stack("full+tracing-file", MeshTracing(file_provider))
        stock_provider, self.exporters["raw+stock-otel"] = encoding_provider("bench-stock")
        self.providers.append(stock_provider)
        await self.plain(
            "raw+stock-otel",
            [aio_server_interceptor(tracer_provider=stock_provider)],  # type: ignore[no-untyped-call]
            aio_client_interceptors(tracer_provider=stock_provider),  # type: ignore[no-untyped-call]
        )

    async def close(self) -> None:
        for channel in self.channels.values():
            await close_edge_channel(channel)
        for server in self.servers:
            await server.stop(None)
        for provider in self.providers:
            provider.shutdown()
        shutil.rmtree(self.traces_dir, ignore_errors=True)


async def _start_variants(concurrency: int, tracing: bool) -> _Variants:
    variants = _Variants(concurrency)
    try:
        await variants.plain("raw", [])
        await variants.plain("floor", [NoopServerInterceptor()], [NoopClientInterceptor()])
        await variants.hand_composed("hand")
        await variants.full_stack("client", None, server=False)
        await variants.full_stack("client-layered", None, server=False, layered=True)
        await variants.full_stack("client-intercepted", None, server=False, intercepted=True)
        await variants.full_stack("server", None, client=False)
        await variants.full_stack("server-intercepted", None, client=False, server_intercepted=True)
        await variants.full_stack("full", None)
        # The mesh's own topology: two replicas, the edge's replica router (ejection on in the
        # full policy) picking one per attempt; and the same with ejection off, where gRPC's
        # round_robin balances (the difference is what routing costs).
        await variants.full_stack("full+replicas", None, replicas=2)
        await variants.full_stack("full+replicas-rr", None, replicas=2, ejection=False)
        if tracing:
            await variants.traced()
    except BaseException:
        await variants.close()
        raise
    return variants


async def _measure(
    variants: _Variants, calls: int, concurrency: int, rounds: int
) -> dict[str, dict[str, float]]:
    """Each variant's figures over `rounds` interleaved rounds (reversed every other one)."""
    stubs = {
        n: variants.stubs.get(n) or profile_pb2_grpc.ProfileServiceStub(c)
        for n, c in variants.channels.items()
    }
    samples: dict[str, list[float]] = {n: [] for n in stubs}
    elapsed: dict[str, float] = dict.fromkeys(stubs, 0.0)
    cpu: dict[str, float] = dict.fromkeys(stubs, 0.0)
    process: dict[str, float] = dict.fromkeys(stubs, 0.0)
    for stub in stubs.values():
        await timed_round(stub, min(calls, 500), concurrency)  # warm-up: connections, caches
    for number in range(rounds):
        order = list(stubs) if number % 2 == 0 else list(reversed(stubs))
        for name in order:
            latencies_s, elapsed_s, cpu_s, process_s = await timed_round(
                stubs[name], calls, concurrency
            )
            samples[name] += latencies_s
            elapsed[name] += elapsed_s
            cpu[name] += cpu_s
            process[name] += process_s
    return {n: _summary(samples[n], elapsed[n], cpu[n], process[n]) for n in stubs}


async def run_overhead_bench(
    calls: int = 3000, concurrency: int = 64, rounds: int = 3, tracing: bool = False
) -> dict[str, Any]:
    """Interleaves `rounds` rounds of each variant; returns figures and ratios to raw.

    Variants: raw grpc.aio; floor (a no-op grpc.aio client and server interceptor: the price of
    the interceptor API itself); hand (tenacity + aiobreaker + asyncio.Semaphore around a plain
    stub, grpc_resilience_mesh.bench.hand_composed); client (our pipeline, plain server);
    client-layered (not fused); client-intercepted (through grpc.aio's interceptor API);
    server (our server chain as serve() mounts it, plain client); server-intercepted (the
    chain as one grpc.aio interceptor); full (both); with `tracing`, also full+tracing (our
    spans) and raw+stock-otel (opentelemetry-instrumentation-grpc's aio interceptors), both
    exporting through a BatchSpanProcessor to an exporter that OTLP-encodes and drops.
    """
    started = await _start_variants(concurrency, tracing)
    # As a service process does once its imports are done
    # (grpc_resilience_mesh.services.runtime.collector): the collector then walks only what calls
    # create, in every variant alike.
    freeze_startup_objects()
    try:
        variants = await _measure(started, calls, concurrency, rounds)
    finally:
        await started.close()
        gc.unfreeze()
    with_ratios(variants)
    for name, exporter in started.exporters.items():
        variants[name]["spans_exported"] = exporter.spans
    raw, full = variants["raw"], variants["full"]
    return {
        "calls": calls,
        "concurrency": concurrency,
        "rounds": rounds,
        "tracing": tracing,
        "exporter": (
            "full+tracing: BatchSpanProcessor -> OTLP protobuf encode, then dropped; "
            "full+tracing-file: the default JSON lines file export"
            if tracing
            else None
        ),
        "variants": variants,
        "raw": raw,
        "full": full,
        "p50_ratio": full["p50_ratio"],
        "p99_ratio": full["p99_ratio"],
        "throughput_ratio": full["throughput_ratio"],
        "cpu_ratio": full["cpu_ratio"],
        **differences(variants),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--tracing", action="store_true", help="add full+tracing and raw+stock-otel variants"
    )
    args = parser.parse_args()
    result = asyncio.run(
        run_overhead_bench(args.calls, args.concurrency, args.rounds, tracing=args.tracing)
    )
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            out.write(text + "\n")


if __name__ == "__main__":
    main()
