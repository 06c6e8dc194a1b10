"""The loads of a topology run: the method resolved and every request rendered before anything
is injected, then a load watched by the guard (and, under faults, by the machine's lever)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf.message import Message

from grpc_resilience_mesh.chaos.topology.experiment_model import GuardModel, LoadSpec
from grpc_resilience_mesh.chaos.topology.guard import Breach, Guard, GuardSpec
from grpc_resilience_mesh.chaos.topology.lever import watch_lever
from grpc_resilience_mesh.loadgen.any_method import (
    CallRecord,
    LoadShape,
    Metadata,
    MethodInfo,
    render_requests,
    resolve_method,
    run_load,
)

BAGGAGE_KEY = "mesh.chaos.run_id"


@dataclass(frozen=True)
class Prepared:
    """The method as served, and every call of both loads, rendered and checked."""

    target: str
    info: MethodInfo
    steady_calls: list[tuple[Message, Metadata]]
    calls: list[tuple[Message, Metadata]]
    run_id: str = ""
    """What every call carries as baggage (BAGGAGE_KEY): the run's spans are found by it."""


def with_baggage(metadata: Metadata, run_id: str) -> Metadata:
    """The call's metadata with the run id as W3C baggage (joined to the user's own, if any)."""
    member = f"{BAGGAGE_KEY}={run_id}"
    theirs = [v for k, v in metadata if k == "baggage"]
    rest = tuple((k, v) for k, v in metadata if k != "baggage")
    return (*rest, ("baggage", ",".join([*theirs, member])))


async def prepare(
    load: LoadSpec, target: str, steady_requests: int, run_id: str, base: Path
) -> Prepared:
    """Resolve the method at `target` (through the client's proxy) and render every request;
    LoadInputError before anything is injected when either does not fit."""
    descriptors = (base / load.descriptor_set).resolve() if load.descriptor_set else None
    info = await resolve_method(
        target,
        load.method,
        descriptor_set=descriptors,
        protos=[(base / p).resolve() for p in load.protos],
        proto_path=[(base / p).resolve() for p in load.proto_path],
    )
    rendered = render_requests(
        info, load.request, load.metadata, max(load.requests, steady_requests)
    )
    calls = [(message, with_baggage(md, run_id)) for message, md in rendered]
    return Prepared(target, info, calls[:steady_requests], calls[: load.requests], run_id)


def shape(load: LoadSpec, requests: int) -> LoadShape:
    return LoadShape(
        requests, load.concurrency, load.deadline_s, load.max_duration_s, load.rate_per_s
    )


def guard_spec(model: GuardModel) -> GuardSpec:
    return GuardSpec(**model.model_dump())


@dataclass
class Watched:
    """A load's records and what stopped it early, if anything."""

    records: list[CallRecord] = field(default_factory=list)
    breach: Breach | None = None
    lever: str | None = None
    stopped_at: float | None = None
    """time.monotonic() when the guard or the lever tripped."""


async def watched_load(
    prepared: Prepared,
    calls: list[tuple[Message, Metadata]],
    load_shape: LoadShape,
    guard: GuardModel,
    on_stop: Callable[[], None] | None = None,
    lever: bool = True,
    final_check: bool = False,
) -> Watched:
    """Run the load with the guard (and the lever, if `lever`) watching; `on_stop` is called
    the moment either trips, before the load has unwound (the rollback starts there). With
    `final_check` the guard judges once more when the load has ended: a steady state shorter
    than one check interval is judged too."""
    out = Watched()
    stop, done = asyncio.Event(), asyncio.Event()
    judge = Guard(guard_spec(guard))

    def tripped(breach: Breach | None = None, reason: str | None = None) -> None:
        if stop.is_set():
            return
        out.breach, out.lever, out.stopped_at = breach, reason, time.monotonic()
        stop.set()
        if on_stop is not None:
            on_stop()

    watchers = [asyncio.create_task(judge.run(lambda b: tripped(breach=b), done))]
    if lever:
        watchers.append(asyncio.create_task(watch_lever(lambda r: tripped(reason=r), done)))
    try:
        out.records = await run_load(
            prepared.target, prepared.info, calls, load_shape, judge.watch, stop
        )
    finally:
        done.set()
        await asyncio.gather(*watchers, return_exceptions=True)
    if final_check and out.breach is None and out.lever is None:
        out.breach = judge.check()
    return out
