"""The metastability lab's model: seeded, stable where nothing amplifies, tipped where retries
do, cured where the cures remove the amplification; the four-panel's published outcomes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from grpc_resilience_mesh.chaos.metastable.__main__ import main
from grpc_resilience_mesh.chaos.metastable.compare import predict, table
from grpc_resilience_mesh.chaos.metastable.cures import FULL, RETRY_ONLY, Cures
from grpc_resilience_mesh.chaos.metastable.model import simulate
from grpc_resilience_mesh.chaos.metastable.outcome import model_metrics, recovered
from grpc_resilience_mesh.chaos.metastable.panels import PUBLISHED, four_panel
from grpc_resilience_mesh.chaos.metastable.region_map import region, tipped_cells
from grpc_resilience_mesh.chaos.metastable.system import System

STORM = System(duration_s=25.0).with_trigger(2.0, 5.0)
"""70% of 40 calls/s, x2 for 5 s: the slowed backend serves 20 of the 28 offered."""


def test_the_same_seed_gives_the_same_run_and_another_seed_another() -> None:
    first, again, other = simulate(STORM, 7), simulate(STORM, 7), simulate(STORM, 8)
    assert first.done.times_s == again.done.times_s
    assert first.attempts == again.attempts and first.abandoned == again.abandoned
    assert first.done.times_s != other.done.times_s


def test_a_load_the_backend_carries_even_amplified_recovers() -> None:
    system = STORM.at_load(0.3)  # 12 homes/s: 3 attempts each is 36 < 40 calls/s
    metrics = model_metrics(system, simulate(system, 1))
    assert recovered(metrics)
    assert metrics["pre_trigger_goodput_per_s"] == pytest.approx(12.0, rel=0.05)


def test_retries_that_amplify_past_capacity_tip_and_keep_it_down() -> None:
    metrics = model_metrics(STORM, simulate(STORM, 1))
    assert not recovered(metrics)
    assert metrics["attempts_per_call"] > 40.0 / 28.0  # more attempts than the backend serves
    assert metrics["after_goodput_per_s"] < 0.5 * 28
    assert metrics["abandoned_work"] > 100


def test_without_retries_the_same_trigger_only_drains() -> None:
    once = replace(STORM, max_attempts=1)
    metrics = model_metrics(once, simulate(once, 1))
    assert recovered(metrics) and metrics["attempts_per_call"] == 1.0


def test_a_cure_shrinks_the_vulnerable_region() -> None:
    loads, lengths = (0.5, 0.7, 0.9), (1.0, 3.0, 6.0)

    def tipped(cures: Cures) -> int:
        return tipped_cells(region(STORM, cures, loads, lengths, seeds=2))

    bare = tipped(RETRY_ONLY)
    assert bare >= 4
    assert tipped(Cures(budget=True)) < bare
    assert tipped(FULL) == 0


def test_the_four_panel_reads_its_numbers_from_the_experiment_file() -> None:
    panels = {p.name: p for p in four_panel()}
    assert set(panels) == set(PUBLISHED)
    assert panels["less-load"].system.rate_per_s == pytest.approx(0.7 * 28)
    assert panels["shorter-trigger"].system.trigger.duration_s == pytest.approx(1.5)
    assert panels["baseline"].system.trigger.factor == pytest.approx(1.3)
    assert panels["tipping"].system.capacity_per_s == pytest.approx(40.0)


def test_the_model_predicts_each_published_outcome() -> None:
    for panel in four_panel():
        assert predict(panel, seeds=3).outcome == panel.published, panel.name


def test_the_table_sets_measured_runs_beside_the_prediction() -> None:
    tipping = next(p for p in four_panel() if p.name == "tipping")
    result = {
        "repeat": [{"variant": "tipping", "metric": "back_after_trigger_s", "values": [12.0, 11.5]}]
    }
    row = table([predict(tipping, seeds=2)], result).splitlines()[-1]
    assert (
        "| tipping | tipped | tipped (0/2 recovered) | 12.0 | tipped/tipped | 12.0, 11.5 |" in row
    )


def test_the_quick_map_runs_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["map", "--quick", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    assert "retry-only" in out and "budget+throttle+admission" in out
    assert "tipped cells: retry-only " in out
