"""Steady background load for the console: an open loop of home and checkout calls at a rate, from
the load generator process (grpc_resilience_mesh/loadgen/steady.py), driven from a thread of its own
until stopped; counts kept as the outcomes stream, outcomes not (it may run for hours)."""

from __future__ import annotations

import asyncio
import math
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from grpc_resilience_mesh.loadgen.outcomes import Outcome
from grpc_resilience_mesh.loadgen.steady import CHUNK_S, SteadyLoad, run_steady

MAX_RATE_PER_S = 200.0


@dataclass
class LoadSettings:
    rate_per_s: float
    home: int = 1
    checkout: int = 0
    for_s: float | None = None
    """Seconds of load, then it stops by itself (None: until stopped)."""

    def __post_init__(self) -> None:
        if not 0 < self.rate_per_s <= MAX_RATE_PER_S:
            raise ValueError(f"rate must be within 0..{MAX_RATE_PER_S:g} per second")
        if self.for_s is not None and not 0 < self.for_s <= 86_400:
            raise ValueError("for_s must be within 0..86400 seconds")
        if self.home < 0 or self.checkout < 0 or self.home + self.checkout == 0:
            raise ValueError("the mix needs at least one home or checkout share, none negative")
        if self.home + self.checkout > 100:
            raise ValueError("the mix's shares add up to at most 100")

    @property
    def mix(self) -> tuple[str, ...]:
        return ("home",) * self.home + ("checkout",) * self.checkout


@dataclass
class _Run:
    settings: LoadSettings
    stop: threading.Event = field(default_factory=threading.Event)
    codes: Counter[str] = field(default_factory=Counter)
    thread: threading.Thread | None = None
    finished: bool = False
    """It ran its `for_s` out (or failed): not running any more, its counts kept."""


class BackgroundLoad:
    """At most one load at a time; `start` replaces the running one."""

    def __init__(self, gateway: str, api_key: str | None) -> None:
        self._gateway = gateway
        self._api_key = api_key
        self._run: _Run | None = None
        self._lock = threading.Lock()
        self.chunk_s = CHUNK_S
        """Seconds of load per plan sent to the generator
        (grpc_resilience_mesh/loadgen/steady.py)."""

    def start(self, settings: LoadSettings) -> None:
        self.stop()
        run = _Run(settings)
        run.thread = threading.Thread(
            target=self._loop, args=(run,), name="console-load", daemon=True
        )
        with self._lock:
            self._run = run
        run.thread.start()

    def stop(self) -> None:
        with self._lock:
            run, self._run = self._run, None
        if run is not None:
            run.stop.set()
            if run.thread is not None:
                run.thread.join(timeout=10)

    def status(self) -> dict[str, Any]:
        """Whether load runs, at what rate and mix, and its outcomes by code so far (of the
        last run too, once a `for_s` ran out)."""
        run = self._run
        if run is None:
            return {"running": False}
        return {
            "running": not run.finished,
            "rate_per_s": run.settings.rate_per_s,
            "home": run.settings.home,
            "checkout": run.settings.checkout,
            "for_s": run.settings.for_s,
            "codes": dict(run.codes),
        }

    def _loop(self, run: _Run) -> None:
        try:
            asyncio.run(self._offer(run))
        finally:
            run.finished = True

    async def _offer(self, run: _Run) -> None:
        stop = asyncio.Event()

        def count(outcome: Outcome) -> None:
            run.codes[outcome.code] += 1

        async def watch() -> None:
            # run.stop is a threading.Event set by another thread: poll it, cheaply.
            while not run.stop.is_set():  # noqa: ASYNC110
                await asyncio.sleep(0.1)
            stop.set()

        watcher = asyncio.create_task(watch())
        rate = run.settings.rate_per_s
        load = SteadyLoad(
            self._gateway,
            rate,
            run.settings.mix,
            concurrency=max(4, int(rate)),
            api_key=self._api_key,
            chunk_s=self.chunk_s,
            duration_s=math.inf if run.settings.for_s is None else run.settings.for_s,
        )
        try:
            await run_steady(load, count, stop)
        finally:
            watcher.cancel()
