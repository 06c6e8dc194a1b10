"""What a phase measures beyond its outcomes: each process's CPU (the dependency's busy
share), the breakers probed closed before a recovery is measured, and the attempts that
crossed an edge while its toxic was on. Fake generator, fake counters: no network, no clock."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import Fault, LoadSpec, ProxyDownFault, ToxicFault
from grpc_resilience_mesh.chaos.run import runner as runner_module
from grpc_resilience_mesh.chaos.run.measure import AttemptsWhileOn, exposure
from grpc_resilience_mesh.chaos.run.runner import Runner
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult
from tests.unit.chaos.test_capacity_and_verdicts import FakeGenerator

Key = tuple[str, str, frozenset[tuple[str, str]]]


def _breakers(open_: int) -> Snapshot:
    """One gauge per breaker: `open_` of them open or half-open, one closed."""
    values: dict[Key, float] = {
        ("gateway", "mesh_breaker_state", frozenset({("method", "Popular")})): 0.0
    }
    for n in range(open_):
        labels = frozenset({("method", f"m{n}")})
        values[("recommendation" if n else "gateway", "mesh_breaker_state", labels)] = 1.0
    return Snapshot(values)


@pytest.fixture
def runner() -> Iterator[Runner]:
    made = Runner(Target(gateway="127.0.0.1:1", toxiproxy=None, admin={}, metrics={"gateway": "u"}))
    made.generator = FakeGenerator()  # type: ignore[assignment]
    yield made


def test_recovery_is_measured_once_probes_have_closed_every_breaker(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(runner.generator, FakeGenerator)
    sent = runner.generator.plans

    async def scrape(_: object) -> Snapshot:  # two breakers stay open until 3 probes passed
        return _breakers(0 if len(sent) >= 3 else 2)

    monkeypatch.setattr(runner_module, "scrape", scrape)
    spec = LoadSpec(requests=100, concurrency=10, rate_x_capacity=0.5)
    probes = asyncio.run(runner._probe_until_closed("full", spec))
    assert probes == 3
    assert [(len(p.requests), p.concurrency, p.rate_per_s) for p in sent] == [(1, 1, None)] * 3

    monkeypatch.setattr(runner_module, "scrape", lambda _: _ready(_breakers(1)))
    assert asyncio.run(runner._probe_until_closed("stuck", spec, most=4)) == 4  # bounded


async def _ready(snap: Snapshot) -> Snapshot:
    return snap


def test_provider_outage_measures_its_recovery_after_the_probes() -> None:
    _, exp = load_experiment("provider-outage")
    assert exp.recovery is not None and exp.recovery.probe_until_closed
    wanted = {(e.metric, e.min, e.max) for e in exp.expectations if e.phase == "recovery"}
    assert ("personalised", 100, None) in wanted  # every request once the breakers closed
    assert ("probes_to_close", 1, 3) in wanted  # half_open_successes, both breakers in series


def test_each_process_cpu_gives_the_dependency_busy_share() -> None:
    load = LoadResult(elapsed_s=2.0)
    load.add_cpu(0.1, {"gateway": 1.0, "profile": 0.4})
    load.add_cpu(0.1, {"gateway": 0.8, "profile": 0.2})
    assert load.mesh_cpu_s == pytest.approx(2.4)
    assert load.busy("gateway") == pytest.approx(0.9)  # 1.8 CPU s over 2 s
    assert load.busy("payment") is None
    load.add_cpu(0.1, None)  # a process restarted mid-load: unknown stays unknown
    assert load.mesh_cpu_s is None and load.busy("gateway") is None


def _attempts(caller: str, dependency: str, n: float) -> Snapshot:
    key = (caller, "mesh_client_attempts_total", frozenset({("dependency", dependency)}))
    return Snapshot({key: n})


def test_met_fault_counts_the_attempts_sent_while_the_toxic_was_on() -> None:
    _, exp = load_experiment("provider-outage")  # a latency toxic on recommendation_to_profile
    variant = exp.variants[0]
    faults = exp.faults_for(variant)
    readings = iter([10.0, 17.0])  # the counter as the toxic went on, then off
    tally = AttemptsWhileOn(
        faults, lambda: _ready(_attempts("recommendation", "profile", next(readings)))
    )

    async def spell() -> None:
        await tally.observe(faults[0], True)
        await tally.observe(faults[0], False)

    asyncio.run(spell())
    assert tally.totals == {0: 7.0}
    phase_total = _attempts("recommendation", "profile", 40.0)  # the whole phase's attempts
    assert exposure(exp, variant, phase_total, tally.totals) == 7.0  # not the phase's 40
    assert exposure(exp, variant, phase_total) == 40.0  # without the spells: the phase


def test_a_cycling_outage_adds_each_spell_and_one_left_on_ends_at_the_last_reading() -> None:
    down = ProxyDownFault(type="proxy_down", edge="gateway_to_payment")
    toxic = ToxicFault(
        type="toxic", edge="gateway_to_payment", toxic="latency", attributes={"latency": 10}
    )
    faults: list[Fault] = [down, toxic]
    readings = iter([0.0, 5.0, 9.0, 12.0, 12.0])
    tally = AttemptsWhileOn(faults, lambda: _ready(_attempts("gateway", "payment", next(readings))))

    async def flaps() -> None:
        await tally.observe(down, True)
        await tally.observe(down, False)  # 5 while down
        await tally.observe(down, True)
        await tally.observe(down, False)  # 3 more
        await tally.observe(toxic, True)  # at 12, never turned off by the schedule

    asyncio.run(flaps())
    tally.close(_attempts("gateway", "payment", 20.0))
    assert tally.totals == {0: 8.0, 1: 8.0}
