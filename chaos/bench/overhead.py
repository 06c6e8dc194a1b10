"""Overhead of the resilience layer (and of tracing): raw grpc.aio vs the full stack.

Every server runs in this process (the fake ProfileService returns a fixed profile); rounds
alternate the variants so drift on a shared machine hits all alike.
Run: python -m chaos.bench.overhead [--tracing] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Sequence
from typing import Any

import grpc
import grpc.aio
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from mesh.resilience.channel import NO_BUILTIN_RETRIES, resilient_channel
from mesh.resilience.events import EventBus
from mesh.resilience.policy import load_policy
from mesh.resilience.server import FaultTable, server_interceptors
from mesh.telemetry.tracing import MeshTracing, server_tracing
from mesh.v1 import profile_pb2, profile_pb2_grpc

_PROFILE = profile_pb2.GetProfileResponse(
    profile=profile_pb2.Profile(user_id="u1", display_name="Ada", interests=["books", "tea"])
)
_REQUEST = profile_pb2.GetProfileRequest(user_id="u1")


class _FixedProfile(profile_pb2_grpc.ProfileServiceServicer):
    async def GetProfile(self, request: Any, context: Any) -> profile_pb2.GetProfileResponse:
        return _PROFILE


async def _start(interceptors: list[grpc.aio.ServerInterceptor]) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server(interceptors=interceptors)
    profile_pb2_grpc.add_ProfileServiceServicer_to_server(_FixedProfile(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


async def _round(stub: Any, calls: int, concurrency: int) -> tuple[list[float], float]:
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
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies_s, time.perf_counter() - started


def _summary(latencies_s: list[float], elapsed_s: float) -> dict[str, float]:
    cuts = statistics.quantiles(latencies_s, n=100)
    return {
        "p50_ms": cuts[49] * 1000,
        "p99_ms": cuts[98] * 1000,
        "throughput_rps": len(latencies_s) / elapsed_s,
    }


class _EncodingExporter(SpanExporter):
    """Encodes each batch to OTLP protobuf bytes as the OTLP exporter would, then drops it:
    the export cost is real, the network is not."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        encode_spans(spans).SerializeToString()
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def _provider(service: str) -> tuple[TracerProvider, _EncodingExporter]:
    exporter = _EncodingExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider, exporter


async def run_overhead_bench(
    calls: int = 3000, concurrency: int = 64, rounds: int = 3, tracing: bool = False
) -> dict[str, Any]:
    """Interleaves `rounds` rounds of each variant; returns figures and ratios to raw.

    Variants: raw grpc.aio; full (our server interceptors + the resilience pipeline); with
    `tracing`, also full+tracing (our spans: server, call and attempt) and raw+stock-otel
    (opentelemetry-instrumentation-grpc aio client and server interceptors), both exporting
    through a BatchSpanProcessor to an exporter that OTLP-encodes and drops each batch.
    """
    policy = load_policy("full", {})
    # Bulkhead sized to the offered concurrency: the bench measures cost, not rejections.
    edge = policy.edge("gateway_to_profile").model_copy(deep=True)
    # Deadlines as long as the caller's 5 s: a stall on a busy machine must not end the run.
    edge = edge.model_copy(
        update={
            "bulkhead": edge.bulkhead.model_copy(update={"max_concurrent": concurrency}),
            "deadline": edge.deadline.model_copy(update={"total_s": 5.0, "attempt_s": 5.0}),
        }
    )
    servers: list[grpc.aio.Server] = []
    channels: dict[str, grpc.aio.Channel] = {}
    providers: list[TracerProvider] = []
    exporters: dict[str, _EncodingExporter] = {}

    async def full_stack(name: str, tracing_on: MeshTracing | None) -> None:
        bus = EventBus()
        if tracing_on is not None:
            bus.subscribe(tracing_on.listener)
        server, target = await _start(
            [
                *server_tracing(tracing_on),
                *server_interceptors("profile", policy.server("profile"), bus, FaultTable()),
            ]
        )
        servers.append(server)
        channels[name] = resilient_channel(
            target,
            edge="gateway_to_profile",
            dependency="profile",
            policy=edge,
            bus=bus,
            attempt_observer=tracing_on.attempt_observer if tracing_on else None,
            call_observer=tracing_on.call_observer if tracing_on else None,
        )

    raw_server, raw_target = await _start([])
    servers.append(raw_server)
    channels["raw"] = grpc.aio.insecure_channel(raw_target, options=[NO_BUILTIN_RETRIES])
    await full_stack("full", None)
    if tracing:
        # A dev dependency: imported only when asked for.
        from opentelemetry.instrumentation.grpc import (
            aio_client_interceptors,
            aio_server_interceptor,
        )

        provider, exporters["full+tracing"] = _provider("bench-mesh")
        providers.append(provider)
        await full_stack("full+tracing", MeshTracing(provider))
        stock_provider, exporters["raw+stock-otel"] = _provider("bench-stock")
        providers.append(stock_provider)
        stock_server, stock_target = await _start(
            [aio_server_interceptor(tracer_provider=stock_provider)]  # type: ignore[no-untyped-call]
        )
        servers.append(stock_server)
        channels["raw+stock-otel"] = grpc.aio.insecure_channel(
            stock_target,
            options=[NO_BUILTIN_RETRIES],
            interceptors=aio_client_interceptors(tracer_provider=stock_provider),  # type: ignore[no-untyped-call]
        )
    stubs = {n: profile_pb2_grpc.ProfileServiceStub(c) for n, c in channels.items()}
    samples: dict[str, list[float]] = {n: [] for n in stubs}
    elapsed: dict[str, float] = dict.fromkeys(stubs, 0.0)
    try:
        for stub in stubs.values():
            await _round(stub, min(calls, 500), concurrency)  # warm-up: connections, caches
        for _ in range(rounds):
            for name, stub in stubs.items():
                latencies_s, elapsed_s = await _round(stub, calls, concurrency)
                samples[name] += latencies_s
                elapsed[name] += elapsed_s
    finally:
        for channel in channels.values():
            await channel.close()
        for server in servers:
            await server.stop(None)
        for provider in providers:
            provider.shutdown()
    variants = {n: _summary(samples[n], elapsed[n]) for n in stubs}
    raw = variants["raw"]
    for row in variants.values():
        row["throughput"] = row["throughput_rps"]
        row["p50_ratio"] = row["p50_ms"] / raw["p50_ms"]
        row["p99_ratio"] = row["p99_ms"] / raw["p99_ms"]
        row["throughput_ratio"] = row["throughput_rps"] / raw["throughput_rps"]
    for name, exporter in exporters.items():
        variants[name]["spans_exported"] = exporter.spans
    full = variants["full"]
    return {
        "calls": calls,
        "concurrency": concurrency,
        "rounds": rounds,
        "tracing": tracing,
        "exporter": "BatchSpanProcessor -> OTLP protobuf encode, then dropped" if tracing else None,
        "variants": variants,
        "raw": raw,
        "full": full,
        "p50_ratio": full["p50_ratio"],
        "p99_ratio": full["p99_ratio"],
        "throughput_ratio": full["throughput_ratio"],
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
