"""A sweep: the file's variants become one per load point, and each point's figures (goodput in
the sending window, accepted latencies, refusals per accepted call, CPU ratios) are what the
curve plots."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.experiment.variant_policy import variant_policy
from grpc_resilience_mesh.chaos.report.plots import plot
from grpc_resilience_mesh.chaos.report.sweep_plot import sweep_figure
from grpc_resilience_mesh.chaos.results import ExperimentResult, PhaseResult, VariantResult
from grpc_resilience_mesh.chaos.run.measure import evaluate
from grpc_resilience_mesh.chaos.run.sweep_metrics import add_sweep_metrics
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult, Outcome

DURATION_S = 8.0
"""The catalogue sweep's duration_s (checked below): the synthetic points send for as long."""


def test_each_line_runs_at_each_point_of_the_declared_capacity() -> None:
    path, exp = load_experiment("overload-sweep")
    assert exp.sweep is not None
    assert exp.sweep.capacity_per_s == 40.0  # 2 replicas x 20 workers / 1 s
    assert exp.sweep.duration_s == DURATION_S
    names = [v.name for v in exp.variants]
    assert len(names) == 6 * 5 and "gradient2-throttle.10x" in names and "pid.0.5x" in names
    point = next(v for v in exp.variants if v.name == "vegas.5x")
    spec = exp.load_for(point)
    assert spec.rate_per_s == 200.0 and spec.requests == 1600  # 5 x 40/s for 8 s
    doc = variant_policy(path, point)
    assert isinstance(doc, dict)
    pool = doc["servers"]["recommendation"]["pool"]
    assert (pool["workers"], pool["service_time_s"]) == (20, 1.0)
    assert doc["servers"]["recommendation"]["limit"]["algorithm"] == "vegas"


def test_the_demo_runs_the_short_sweep_and_only_its_expectations() -> None:
    _, exp = load_experiment("overload-sweep", short_sweep=True)
    names = [v.name for v in exp.variants]
    # none at 10x only (its collapse bound); the throttled line at the two points its 10x
    # bounds are ratios to (p99 at half load, CPU per home at capacity) and at 10x
    assert names == [
        "none.10x",
        "gradient2-throttle.0.5x",
        "gradient2-throttle.1x",
        "gradient2-throttle.10x",
    ]
    assert exp.expectations and all(e.variant in names for e in exp.expectations)
    assert exp.load_for(exp.variants[0]).requests == 2400  # 10 x 40/s for 6 s
    ratios = {e.metric for e in exp.expectations if e.variant == "gradient2-throttle.10x"}
    assert {"accepted_p99_vs_low", "gateway_cpu_vs_capacity"} <= ratios


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"points": [0, 1]}, r"not in \(0, 20\]"),
        ({"short": {"points": [3], "lines": ["a"], "duration_s": 2}}, "some of points"),
        ({"warmup_s": 5}, "warmup_s must be below"),
        (
            {"short": {"points": [1], "lines": ["a"], "line_points": {"b": [1]}, "duration_s": 2}},
            "'b' is not one of short.lines",
        ),
        (
            {"short": {"points": [1], "lines": ["a"], "line_points": {"a": [2]}, "duration_s": 2}},
            "line_points.a must be some of short.points",
        ),
    ],
)
def test_a_bad_sweep_is_refused_naming_the_key(
    tmp_path: Path, change: dict[str, object], says: str
) -> None:
    sweep = {"workers": 2, "service_time_s": 0.1, "points": [1, 2], **change}
    doc = {"title": "t", "hypothesis": "h", "sweep": sweep, "variants": [{"name": "a"}]}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ExperimentError, match=says):
        load_experiment(str(path))


def test_the_demo_runs_only_an_experiments_demo_variants_and_their_expectations() -> None:
    _, full = load_experiment("criticality")
    _, demo = load_experiment("criticality", short_sweep=True)
    assert len(full.variants) == 4
    assert [v.name for v in demo.variants] == ["unmarked", "marked"]
    assert {e.variant for e in demo.expectations} == {"unmarked", "marked"}
    assert full.expected_s and demo.expected_s == full.expected_s * 2 / 4  # the subset's share


def test_a_variants_demo_load_changes_its_load_in_the_demo_only(tmp_path: Path) -> None:
    doc = {
        "title": "t",
        "hypothesis": "h",
        "load": {"rpc": ["home"], "requests": 100, "concurrency": 10},
        "variants": [
            {"name": "storm", "load": {"requests": 90}, "demo_load": {"concurrency": 50}},
            {"name": "cure"},
        ],
        "demo_variants": ["storm", "cure"],
    }
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(doc))
    for demo_variants in (["storm", "cure"], []):  # with and without a demo subset
        path.write_text(yaml.safe_dump({**doc, "demo_variants": demo_variants}))
        _, full = load_experiment(str(path))
        _, demo = load_experiment(str(path), short_sweep=True)
        loads = {
            form: {v.name: (e.load_for(v).requests, e.load_for(v).concurrency) for v in e.variants}
            for form, e in (("full", full), ("demo", demo))
        }
        assert loads == {
            "full": {"storm": (90, 10), "cure": (100, 10)},
            "demo": {"storm": (90, 50), "cure": (100, 10)},
        }


def test_a_variants_demo_faults_replace_its_faults_in_the_demo_only(tmp_path: Path) -> None:
    flap = {"type": "proxy_down", "edge": "gateway_to_payment", "down_s": 4.0, "up_s": 4.0}
    doc = {
        "title": "t",
        "hypothesis": "h",
        "load": {"rpc": ["checkout"], "requests": 100, "max_duration_s": 25},
        "faults": [{**flap, "start_s": 1.0, "stop_s": 21.0}],
        "variants": [
            {"name": "full", "demo_faults": [{**flap, "start_s": 1.0, "stop_s": 13.0}]},
            {"name": "other"},
        ],
    }
    path = tmp_path / "exp.yaml"
    for demo_variants in (["full", "other"], []):  # with and without a demo subset
        path.write_text(yaml.safe_dump({**doc, "demo_variants": demo_variants}))
        stops = {
            form: {v.name: [f.stop_s for f in e.faults_for(v)] for v in e.variants}
            for form, e in (
                ("full", load_experiment(str(path))[1]),
                ("demo", load_experiment(str(path), short_sweep=True)[1]),
            )
        }
        assert stops == {
            "full": {"full": [21.0], "other": [21.0]},
            "demo": {"full": [13.0], "other": [21.0]},
        }


def test_a_demo_fault_is_validated_as_a_fault(tmp_path: Path) -> None:
    flap = {"type": "proxy_down", "down_s": 4.0}
    doc = {
        "title": "t",
        "hypothesis": "h",
        "variants": [{"name": "full", "demo_faults": [{**flap, "edge": "gateway_to_payment"}]}],
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    for short in (False, True):  # a typo is caught by `mesh chaos run` too, not first in the demo
        with pytest.raises(ExperimentError, match=r"demo_faults\.0.*down_s and up_s go together"):
            load_experiment(str(path), short_sweep=short)


def test_an_unknown_demo_variant_is_refused_naming_it(tmp_path: Path) -> None:
    doc = {
        "title": "t",
        "hypothesis": "h",
        "variants": [{"name": "full"}],
        "demo_variants": ["ful"],
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ExperimentError, match="demo_variants: unknown variant 'ful'"):
        load_experiment(str(path))


def _homes(n: int, every_s: float, wait_s: float, degraded_every: int = 0) -> list[Outcome]:
    return [
        Outcome(
            "home",
            "OK",
            wait_s,
            degraded=("recommendations:cached-popular",)
            if degraded_every and i % degraded_every
            else (),
            started_s=50.0 + i * every_s,
        )
        for i in range(n)
    ]


def _counters(ok: float, refused: float) -> Snapshot:
    calls = "mesh_server_calls_total"
    method = ("method", "/mesh.v1.RecommendationService/Recommend")
    return Snapshot(
        {
            ("recommendation", calls, frozenset({method, ("code", "OK")})): ok,
            (
                "recommendation-2",
                calls,
                frozenset({method, ("code", "RESOURCE_EXHAUSTED")}),
            ): refused,
        }
    )


def _point(
    exp_variants: Mapping[str, object], name: str, load: LoadResult, snap: Snapshot
) -> VariantResult:
    variant = exp_variants[name]
    phase = PhaseResult(load, snap, {"offered_per_s": len(load.outcomes) / DURATION_S})
    return VariantResult(variant, "full", {"fault": phase})  # type: ignore[arg-type]


def _sweep_result() -> ExperimentResult:
    _, exp = load_experiment("overload-sweep")
    variants = {v.name: v for v in exp.variants}
    result = ExperimentResult("overload-sweep", Path("overload-sweep.yaml"), exp)
    d = DURATION_S
    low = LoadResult(_homes(round(20 * d), 0.05, 0.1), d + 0.5, process_cpu_s={"gateway": 0.04 * d})
    at_1x = LoadResult(
        _homes(round(40 * d), 0.025, 0.1), d + 0.5, process_cpu_s={"gateway": 0.08 * d}
    )
    # 10x: 400 homes/s for the point's duration, one in 10 personalised (40/s), each waiting
    # 0.25 s
    high = LoadResult(
        _homes(round(400 * d), 0.0025, 0.25, degraded_every=10),
        d + 0.6,
        process_cpu_s={"gateway": 1.0 * d, "recommendation": 0.075 * d},
    )
    result.variants += [
        _point(variants, "gradient2-throttle.0.5x", low, _counters(20 * d, 0)),
        _point(variants, "gradient2-throttle.1x", at_1x, _counters(40 * d, 0)),
        _point(variants, "gradient2-throttle.10x", high, _counters(40 * d, 60 * d)),
    ]
    return result


def test_a_points_figures_come_from_its_sending_window_and_its_line() -> None:
    result = _sweep_result()
    add_sweep_metrics(result)
    ten = result.variants[2].phases["fault"].metrics
    # Calls that ended from the warmup to the end of sending: 40 personalised per second.
    assert ten["window_goodput_per_s"] == pytest.approx(40.0, rel=0.01)
    assert ten["goodput_vs_declared"] == pytest.approx(1.0, rel=0.01)
    assert ten["accepted_p99_ms"] == pytest.approx(250.0)
    assert ten["accepted_p99_vs_low"] == pytest.approx(2.5)  # against 100 ms at 0.5x
    assert ten["backend_refusals_per_accepted"] == pytest.approx(1.5)
    # 1.0 s x d / (400 x d) homes = 2.5 ms against 0.08 s x d / (40 x d) = 2 ms at 1x
    assert ten["gateway_cpu_vs_capacity"] == pytest.approx(1.25)
    assert ten["busiest_process_busy"] == pytest.approx(DURATION_S / (DURATION_S + 0.6))
    low = result.variants[0].phases["fault"].metrics
    assert low["goodput_vs_declared"] == pytest.approx(0.5, rel=0.02)


def test_a_line_without_a_point_below_capacity_has_no_p99_ratio() -> None:
    # the demo's none line runs at 10x only: its p99 against itself would read 1.0, and a
    # line whose lowest point is 1x would divide by a p99 with queueing in it
    result = _sweep_result()
    del result.variants[0]  # the throttled line from 1x
    add_sweep_metrics(result)
    ten = result.variants[1].phases["fault"].metrics
    assert "accepted_p99_ms" in ten and "accepted_p99_vs_low" not in ten
    assert ten["gateway_cpu_vs_capacity"] == pytest.approx(1.25)  # 1x is there


def test_the_curve_plots_each_lines_goodput_and_p99_against_the_offered_load(
    tmp_path: Path,
) -> None:
    result = _sweep_result()
    add_sweep_metrics(result)
    fig = sweep_figure(result)
    good_ax, p99_ax = fig.axes[:2]
    (goodput,) = [line for line in good_ax.lines if line.get_gid() == "goodput-gradient2-throttle"]
    assert list(cast(Any, goodput.get_xdata())) == [0.5, 1.0, 10.0]
    assert cast(Any, goodput.get_ydata())[2] == pytest.approx(40.0, rel=0.01)
    (p99,) = [line for line in p99_ax.lines if line.get_gid() == "p99-gradient2-throttle"]
    assert list(cast(Any, p99.get_ydata())) == pytest.approx([100.0, 100.0, 250.0])
    assert [p.name for p in plot(result, tmp_path)] == ["sweep.png"]


def test_a_point_that_accepted_nothing_has_no_p99_to_pass_a_bound() -> None:
    result = _sweep_result()
    ten = result.variants[2]
    ten.phases["fault"].load.outcomes[:] = [
        Outcome("home", "OK", 0.7, degraded=("recommendations:cached-popular",), started_s=50.0)
    ] * 100
    add_sweep_metrics(result)
    metrics = ten.phases["fault"].metrics
    assert metrics["window_goodput_per_s"] == 0
    assert "accepted_p99_ms" not in metrics and "accepted_p99_vs_low" not in metrics


def test_the_report_table_has_a_row_per_point_with_the_curves_numbers() -> None:
    from rich.console import Console

    from grpc_resilience_mesh.chaos.report.tables import print_result

    result = _sweep_result()
    result.verdicts = evaluate(result)  # adds the sweep's figures first
    console = Console(record=True, width=200)
    print_result(console, result)
    text = console.export_text()
    row = next(line for line in text.splitlines() if line.startswith("gradient2-throttle.10x"))
    goodput, _, p50, p99 = (float(cell) for cell in row.split()[1:5])
    assert goodput == pytest.approx(40.0, rel=0.02) and p50 == p99 == 250.0, row
