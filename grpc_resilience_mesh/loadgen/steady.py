"""Steady open-loop load for as long as it is wanted (the soak, the console's background load):
the generator process in plans of `chunk_s` each, outcomes streamed, none kept.

A plan is built whole before it starts (every request's key and trace chosen by the runner), so
an endless load is a sequence of bounded ones: memory stays flat however long it runs. Between
two plans the generator waits for the last one's calls in flight (at most their deadline), so
under a fault that holds calls the offered rate dips by at most `timeout_s / chunk_s`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from grpc_resilience_mesh.loadgen.in_process import LoadGenerator
from grpc_resilience_mesh.loadgen.outcomes import Outcome
from grpc_resilience_mesh.loadgen.plans import plan_for
from grpc_resilience_mesh.loadgen.protocol import Plan

CHUNK_S = 30.0


@dataclass(frozen=True)
class SteadyLoad:
    """What to offer: `rate_per_s` calls a second (at most `concurrency` in flight; a call
    that finds no free slot is CLIENT_DROPPED), mixed as `rpc_mix`, for `duration_s`."""

    gateway: str
    rate_per_s: float
    rpc_mix: Sequence[str] = ("home",)
    concurrency: int = 32
    timeout_s: float = 2.0
    duration_s: float = math.inf
    api_key: str | None = None
    chunk_s: float = CHUNK_S


async def run_steady(
    load: SteadyLoad,
    on_outcome: Callable[[Outcome], None],
    stop: asyncio.Event,
    generator: LoadGenerator | None = None,
) -> int:
    """Offer `load` until `stop` is set or its plans' schedules add up to its duration (the
    generator's start-up and the gaps between plans not counted); the plans it ran."""
    own = generator is None
    generator = generator or LoadGenerator()
    offered_s = 0.0
    plans = 0
    try:
        while not stop.is_set() and offered_s < load.duration_s:
            span = min(load.chunk_s, load.duration_s - offered_s)
            await generator.stream(_plan(load, span), on_outcome, stop)
            offered_s += span
            plans += 1
    finally:
        if own:
            await generator.close()
    return plans


def _plan(load: SteadyLoad, span_s: float) -> Plan:
    return plan_for(
        load.gateway,
        max(1, math.ceil(load.rate_per_s * span_s)),
        load.rpc_mix,
        concurrency=load.concurrency,
        rate_per_s=load.rate_per_s,
        timeout_s=load.timeout_s,
        max_duration_s=span_s,
        api_key=load.api_key,
    )
