"""A bounded soak: steady load, random faults from the catalogue, RSS and FDs over time.

The load is open-loop at a modest fixed rate (home and checkout), from the load generator process
(grpc_resilience_mesh/loadgen/steady.py: outcomes counted as they stream, none kept). Every
`fault_on_s + fault_off_s` one fault drawn from the catalogue's vocabulary (its latency and timeout
toxics, moved to a random edge, and its application faults) is on for `fault_on_s`. Every service's
resident memory (VmRSS) and open file descriptors are sampled every `sample_every_s`.

Targets: after the warm-up, the mean of the last window of samples is at most 10% above the
mean of the first window, for memory and descriptors of every service (descriptors get a few
more on top: see `fd_slack`); and no acknowledged checkout (SUCCEEDED or DECLINED) is missing
from the ledger, read straight from its file.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean

from grpc_resilience_mesh.chaos.experiment.loading import catalogue
from grpc_resilience_mesh.chaos.experiment.model import AppFault, Fault, ToxicFault
from grpc_resilience_mesh.chaos.run.faults import Injector, describe
from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.loadgen.outcomes import Outcome
from grpc_resilience_mesh.loadgen.steady import SteadyLoad, run_steady
from grpc_resilience_mesh.services.topology import EDGES, SERVICES

SOAK_TOXICS = ("latency", "timeout")
MESH_SERVICES = frozenset(s.name for s in SERVICES)
"""Judged against the growth target; other processes (peers) are reported only."""


@dataclass(frozen=True)
class SoakConfig:
    """How long, how hard, and what counts as growth."""

    duration_s: float = 600.0
    rate_per_s: float = 40.0
    concurrency: int = 32
    deadline_s: float = 2.0
    fault_on_s: float = 10.0
    fault_off_s: float = 10.0
    sample_every_s: float = 2.0
    warmup_s: float | None = None
    """Default: a quarter of the duration, at most 60 s."""
    window_s: float | None = None
    """Samples averaged at each end. Default: a sixth of the duration, at most 60 s."""
    max_growth: float = 0.10
    fd_slack: int = 4
    """Descriptors a service may gain beyond `max_growth`: on a base of ~20, a connection pool
    (Redis, gRPC subchannels) filling up to its size late in a short soak is +15%, yet it stops
    there; a leak keeps growing and passes any fixed allowance."""
    seed: int | None = None

    @property
    def warmup(self) -> float:
        return self.warmup_s if self.warmup_s is not None else min(self.duration_s / 4, 60.0)

    @property
    def window(self) -> float:
        return self.window_s if self.window_s is not None else min(self.duration_s / 6, 60.0)


@dataclass(frozen=True)
class Sample:
    """One reading of one process."""

    at_s: float
    service: str
    rss_kb: int
    fds: int


@dataclass(frozen=True)
class Growth:
    """A metric of a service: first-window and last-window means after the warm-up."""

    service: str
    metric: str
    first: float
    last: float
    limit: float
    judged: bool = True
    """False for third-party peers (Redis, the SMTP sink): their memory is their data."""
    slack: float = 0.0
    """Absolute allowance on top of `limit` (descriptors only)."""

    @property
    def growth(self) -> float:
        return (self.last - self.first) / self.first if self.first else 0.0

    @property
    def passed(self) -> bool:
        return not self.judged or self.last <= self.first * (1 + self.limit) + self.slack


@dataclass
class SoakResult:
    """Everything a soak measured, and whether it met its targets."""

    config: SoakConfig
    samples: list[Sample] = field(default_factory=list)
    growth: list[Growth] = field(default_factory=list)
    codes: Counter[str] = field(default_factory=Counter)
    acknowledged: int = 0
    lost: list[str] = field(default_factory=list)
    faults: list[tuple[float, str, bool]] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.lost and all(g.passed for g in self.growth) and bool(self.growth)


def fault_vocabulary() -> list[Fault]:
    """Distinct latency/timeout toxics and app faults used by the catalogue's experiments."""
    seen: dict[str, Fault] = {}
    for _, exp in catalogue():
        for variant in exp.variants:
            for fault in exp.faults_for(variant):
                if isinstance(fault, AppFault) or (
                    isinstance(fault, ToxicFault) and fault.toxic in SOAK_TOXICS
                ):
                    plain = fault.model_copy(update={"start_s": 0.0, "stop_s": None})
                    seen.setdefault(describe(plain), plain)
    return list(seen.values())


def draw_fault(vocabulary: list[Fault], rng: random.Random) -> Fault:
    fault = rng.choice(vocabulary)
    if isinstance(fault, ToxicFault):
        fault = fault.model_copy(update={"edge": rng.choice(EDGES).name})
    return fault


def read_proc(pid: int) -> tuple[int, int] | None:
    """(VmRSS in kB, open descriptors) of `pid`, or None if it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]), fds
    return None


def ledger_keys(path: Path) -> set[str]:
    """Every idempotency key in the ledger, read without taking a write lock."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {row[0] for row in db.execute("SELECT idempotency_key FROM charges")}
    finally:
        db.close()


def growth_of(samples: list[Sample], config: SoakConfig, elapsed_s: float) -> list[Growth]:
    start, end = config.warmup, max(elapsed_s - config.window, config.warmup)
    result = []
    for service in sorted({s.service for s in samples}):
        mine = [s for s in samples if s.service == service]
        first = [s for s in mine if start <= s.at_s <= start + config.window]
        last = [s for s in mine if s.at_s >= end]
        if not first or not last:
            continue
        for metric in ("rss_kb", "fds"):
            result.append(
                Growth(
                    service,
                    metric,
                    fmean(getattr(s, metric) for s in first),
                    fmean(getattr(s, metric) for s in last),
                    config.max_growth,
                    judged=service in MESH_SERVICES,
                    slack=config.fd_slack if metric == "fds" else 0.0,
                )
            )
    return result


Tick = Callable[[float, Counter[str], str], None]
"""tick(elapsed_s, codes so far, fault now on or ''): progress for a display."""


async def run_soak(mesh: Mesh, config: SoakConfig, tick: Tick | None = None) -> SoakResult:
    """Run the soak against a started mesh and return its measurements."""
    state = mesh.state
    assert state is not None, "start the mesh first"
    result = SoakResult(config)
    injector = _injector(state)
    stop = asyncio.Event()
    current = [""]
    acked: list[str] = []
    t0 = time.monotonic()

    def on_outcome(outcome: Outcome) -> None:
        result.codes[f"{outcome.rpc} {outcome.code}"] += 1
        if outcome.code == "OK" and outcome.status in ("SUCCEEDED", "DECLINED"):
            acked.append(outcome.key)

    async def timer() -> None:  # ends with the run however it ends (gathered below)
        await _sleep_or_stop(stop, config.duration_s)
        stop.set()

    injector._t0 = t0
    tasks = [
        asyncio.create_task(_chaos(state, config, injector, stop, current)),
        asyncio.create_task(_sampler(state, config, result, stop, current, t0, tick)),
        asyncio.create_task(timer()),
    ]
    try:
        await run_steady(_steady_load(state, config), on_outcome, stop)
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await injector.reset_all()
    result.elapsed_s = time.monotonic() - t0
    result.faults = [(e.at_s, e.what, e.on) for e in injector.timeline]
    _count_lost(result, acked, mesh.state_dir / "payment" / "ledger.sqlite3")
    result.growth = growth_of(result.samples, config, result.elapsed_s)
    return result


def _steady_load(state: MeshState, config: SoakConfig) -> SteadyLoad:
    """Home and checkout, open loop at the soak's rate, through the load generator process."""
    return SteadyLoad(
        state.gateway,
        config.rate_per_s,
        ("home", "checkout"),
        concurrency=config.concurrency,
        timeout_s=config.deadline_s,
        duration_s=config.duration_s,
        api_key=state.api_key,
    )


async def _chaos(
    state: MeshState,
    config: SoakConfig,
    injector: Injector,
    stop: asyncio.Event,
    current: list[str],
) -> None:
    """One fault drawn at random every `fault_off_s`, on for `fault_on_s`, until `stop`."""
    rng = random.Random(config.seed)
    usable = [f for f in fault_vocabulary() if state.toxiproxy or isinstance(f, AppFault)]
    index = 0
    while not stop.is_set():
        if await _sleep_or_stop(stop, config.fault_off_s):
            return
        fault = draw_fault(usable, rng)
        index += 1
        current[0] = describe(fault)
        try:
            await injector.set(index, fault, True)
            await _sleep_or_stop(stop, config.fault_on_s)
        finally:
            current[0] = ""
            await injector.set(index, fault, False)


async def _sampler(
    state: MeshState,
    config: SoakConfig,
    result: SoakResult,
    stop: asyncio.Event,
    current: list[str],
    t0: float,
    tick: Tick | None,
) -> None:
    """Every service's RSS and descriptors every `sample_every_s`, until `stop`."""
    while True:
        now = time.monotonic() - t0
        for name, pid in state.pids.items():
            if name != "toxiproxy" and (reading := read_proc(pid)) is not None:
                result.samples.append(Sample(round(now, 2), name, *reading))
        if tick is not None:
            tick(now, result.codes, current[0])
        if await _sleep_or_stop(stop, config.sample_every_s):
            return


def _injector(state: MeshState) -> Injector:
    """Faults through the mesh's Toxiproxy (if it has one) and its services' admin ports."""
    token = state.admin_token
    return Injector(
        ToxiproxyClient(state.toxiproxy, timeout_s=2.0, token=token) if state.toxiproxy else None,
        {name: addrs["admin"] for name, addrs in state.services.items()},
        admin_token=token,
    )


def _count_lost(result: SoakResult, acked: list[str], ledger: Path) -> None:
    """Acknowledged charges the ledger does not hold are lost."""
    in_ledger = ledger_keys(ledger)
    result.acknowledged = len(acked)
    result.lost = [key for key in acked if key not in in_ledger]


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        return False
    return True
