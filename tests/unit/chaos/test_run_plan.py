"""A run's plan from the files alone: each experiment's loads, the services' restarts into and
out of xDS (the mesh stays as the last variant left it, across experiments), the capacity
measured once per RPC mix, and `mesh chaos plan` printing it without starting anything."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.experiment.loading import catalogue, load_experiment
from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.run.eta import expected_s
from grpc_resilience_mesh.chaos.run.plan import CALIBRATION_S, RESTART_S, minutes, plan
from grpc_resilience_mesh.cli.app import app
from tests.unit.chaos.render_fixtures import OWN_CAPACITY


def _named(*names: str, demo: bool = False) -> list[tuple[str, Experiment]]:
    return [(n, load_experiment(n, demo)[1]) for n in names]


def test_an_xds_variant_costs_a_restart_in_and_the_next_plain_one_a_restart_out() -> None:
    # fault-sources ends on its xDS variants: payment-lost-response starts by leaving xDS
    sources, payment = plan(_named("fault-sources", "payment-lost-response"))
    assert (sources.restarts, payment.restarts) == (1, 1)
    assert payment.restarts_s == RESTART_S
    # pushback: two plain variants, then two under xDS; a mesh started under xDS (--xds)
    # restarts out of it first, then back in
    (plain,) = plan(_named("pushback"))
    (under,) = plan(_named("pushback"), xds=True)
    assert (plain.restarts, under.restarts) == (1, 2)


def test_capacity_is_measured_once_per_rpc_mix_and_never_for_a_scenario() -> None:
    names = ("deadline-budget", "payment-lost-response", "pushback", "stream-cut")
    budget, payment, pushback, stream = plan(_named(*names), measured=())
    assert budget.capacity_s == CALIBRATION_S  # home, the first time
    assert payment.capacity_s == CALIBRATION_S  # checkout, the first time
    assert pushback.capacity_s == 0.0  # home again: measured already
    assert stream.capacity_s == 0.0  # a scenario sets its own pace
    assert budget.total_s == expected_s(load_experiment("deadline-budget")[1]) + CALIBRATION_S


def test_an_experiment_that_measures_its_own_capacity_plans_the_measure() -> None:
    budget, shedding, pushback = plan(_named("deadline-budget", OWN_CAPACITY, "pushback"))
    assert budget.capacity_s == CALIBRATION_S  # home, the first time
    assert shedding.capacity_s == CALIBRATION_S  # home again: capacity_per_experiment
    assert pushback.capacity_s == 0.0  # home, measured already


def test_a_sweep_adds_its_declared_service_time_to_each_point() -> None:
    _, exp = load_experiment("overload-sweep", short_sweep=True)
    (swept,) = plan([("overload-sweep", exp)], measured=())
    assert exp.sweep is not None and exp.sweep.service_time_s == 1.0
    # 4 points x (two steady states of one wave of 20 homes + the last call) x 1 s
    assert swept.loads_s == pytest.approx(expected_s(exp) + 4 * 3 * 1.0)


def test_the_demo_plans_less_than_the_full_run_experiment_by_experiment() -> None:
    full = plan((p.stem, exp) for p, exp in catalogue())
    demo = plan(_named(*(p.stem for p, _ in catalogue()), demo=True))
    assert [p.name for p in demo] == [p.name for p in full]
    assert all(d.total_s <= f.total_s for d, f in zip(demo, full, strict=True))
    shorter = {d.name for d, f in zip(demo, full, strict=True) if d.total_s < f.total_s}
    assert {"overload-sweep", "metastable-retry-storm", "provider-outage"} <= shorter
    assert sum(p.restarts for p in demo) == 2  # into xDS for fault-sources, and out again


def test_mesh_chaos_plan_prints_each_experiment_and_the_total_without_starting_anything() -> None:
    result = CliRunner().invoke(app, ["chaos", "plan", "--demo"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for p, _ in catalogue():
        assert p.stem in result.output
    demo = plan(_named(*(p.stem for p, _ in catalogue()), demo=True))
    total = sum(p.total_s for p in demo)
    count = len(catalogue())
    assert f"planned {minutes(total)} ({total:.0f} s) for {count} experiments" in result.output
    poison = next(p for p in demo if p.name == "poison-job")
    assert poison.measured and f"{poison.loads_s:.1f}*" in result.output  # not the files' 33 s
    assert "* loads as a run of the demo took them" in result.output
    one = CliRunner().invoke(app, ["chaos", "plan", "pushback"], env={"COLUMNS": "200"})
    assert one.exit_code == 0 and "for 1 experiment;" in one.output


def test_mesh_chaos_plan_refuses_an_unknown_experiment_or_nothing_named() -> None:
    bad = CliRunner().invoke(app, ["chaos", "plan", "no-such-experiment"])
    assert bad.exit_code == 2 and "no-such-experiment" in bad.output
    none = CliRunner().invoke(app, ["chaos", "plan"])
    assert none.exit_code == 2 and "name at least one experiment" in none.output


def test_minutes_reads_like_the_demos_summary() -> None:
    assert minutes(42.4) == "42 s" and minutes(340) == "5 min 40 s" and minutes(360) == "6 min 00 s"
