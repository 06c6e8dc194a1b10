"""Plots that teach: the figures hold the data they promise (inspected before saving), and
reports/index.html links every experiment's report, tables, plots and trace ids."""

from __future__ import annotations

import json
import re
import secrets
import warnings
from pathlib import Path
from typing import Any, cast

import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.report.breaker_marks import breaker_moves
from grpc_resilience_mesh.chaos.report.index import write_index
from grpc_resilience_mesh.chaos.report.job_plots import scenario_figures
from grpc_resilience_mesh.chaos.report.plots import calls_figure, latency_figure, plot
from grpc_resilience_mesh.chaos.report.report_md import write_report
from grpc_resilience_mesh.chaos.results import (
    ExperimentResult,
    FaultEvent,
    PhaseResult,
    VariantResult,
)
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.loadgen.in_process import LoadResult, Outcome
from tests.unit.chaos.render_fixtures import OWN_CAPACITY


def _outcomes(
    waits_ms: list[float], rpc: str = "home", code: str = "OK", every_s: float = 0.1
) -> list[Outcome]:
    return [
        Outcome(rpc, code, ms / 1000, started_s=100.0 + i * every_s, trace_id=secrets.token_hex(16))
        for i, ms in enumerate(waits_ms)
    ]


def _result(
    name: str,
    loads: dict[str, list[Outcome]],
    timeline: list[FaultEvent] | None = None,
    metrics: dict[str, dict[str, float]] | None = None,
) -> ExperimentResult:
    _, exp = load_experiment(name)
    variants = {v.name: v for v in exp.variants}
    result = ExperimentResult(name, Path(f"{name}.yaml"), exp)
    for variant, outcomes in loads.items():
        phase = PhaseResult(
            LoadResult(outcomes, 1.0),
            Snapshot(),
            (metrics or {}).get(variant, {"dependency_calls": float(len(outcomes))}),
            list(timeline or []),
        )
        result.variants.append(VariantResult(variants[variant], "full", {"fault": phase}))
    return result


def _scenario(name: str, by_variant: dict[str, tuple[dict[str, float], list[Any]]]) -> Any:
    _, exp = load_experiment(name)
    variants = {v.name: v for v in exp.variants}
    result = ExperimentResult(name, Path(f"{name}.yaml"), exp)
    for variant, (metrics, rows) in by_variant.items():
        phase = PhaseResult(LoadResult(), Snapshot(), metrics, rows=rows)
        result.variants.append(VariantResult(variants[variant], "full", {"fault": phase}))
    return result


def _gids(ax: Axes, gid: str) -> list[Any]:
    return [a for a in (*ax.patches, *ax.lines) if a.get_gid() == gid]


def _rects(ax: Axes) -> list[Any]:
    """The bars of an axes (Rectangles: matplotlib types them as plain Patches)."""
    return list(ax.patches)


def _xspan(band: Any) -> tuple[float, float]:
    """The data-x extent of an axvspan (a Rectangle)."""
    return band.get_x(), band.get_x() + band.get_width()


def _scatter_points(ax: Axes) -> int:
    return sum(len(cast(Any, c.get_offsets())) for c in ax.collections)


def test_every_variant_shares_one_linear_y_axis_when_the_spread_is_small() -> None:
    result = _result(
        "provider-outage",
        {"unprotected": _outcomes([1005, 1015, 1025]), "retry-only": _outcomes([3050, 3150])},
    )
    fig = latency_figure(result, {})
    first, second = fig.axes[:2]
    assert first.get_shared_y_axes().joined(first, second)
    assert first.get_yscale() == second.get_yscale() == "linear"
    assert first.get_ylim() == second.get_ylim()
    low, high = first.get_ylim()
    assert low < 1005 and high > 3150, "1005-1025 and 3050-3150 ms on one scale"
    assert [_scatter_points(ax) for ax in (first, second)] == [3, 2]


def test_a_spread_over_20x_gets_a_log_scale() -> None:
    result = _result(
        "provider-outage", {"unprotected": _outcomes([1010, 1020]), "full": _outcomes([1.2, 2.0])}
    )
    fig = latency_figure(result, {})
    assert {ax.get_yscale() for ax in fig.axes} == {"log"}


def test_the_fault_window_is_shaded_where_the_faults_were_on() -> None:
    timeline = [FaultEvent(0.5, "latency", True), FaultEvent(2.0, "latency", False)]
    result = _result("provider-outage", {"full": _outcomes([5] * 40)}, timeline)
    (ax,) = latency_figure(result, {}).axes
    (band,) = _gids(ax, "fault-window")
    assert _xspan(band) == pytest.approx((0.5, 2.0))


def test_an_open_loop_overload_is_shaded_whole() -> None:
    result = _result(
        OWN_CAPACITY,
        {"no-shedding": _outcomes([30] * 20), "shedding": _outcomes([20] * 20)},
    )
    fig = latency_figure(result, {})
    for ax in fig.axes:
        (band,) = _gids(ax, "fault-window")
        assert band.get_label() == "overload"
        start, end = _xspan(band)
        assert start == 0 and end >= 1.9


def test_bulkhead_isolation_plots_home_and_checkout_apart() -> None:
    mixed = _outcomes([2000] * 6) + _outcomes([15] * 2, rpc="checkout")
    result = _result("bulkhead-isolation", {"shared-limit": mixed, "per-dependency": mixed})
    titles = [ax.get_title(loc="left") for ax in latency_figure(result, {}).axes]
    assert titles == [
        "shared-limit: checkout - user wait per request",
        "shared-limit: home - user wait per request",
        "per-dependency: checkout - user wait per request",
        "per-dependency: home - user wait per request",
    ]


def test_calls_mark_the_seeds_figure_on_each_bar_that_has_one() -> None:
    result = _result(
        "provider-outage",
        {v: _outcomes([5]) for v in ("unprotected", "retry-only", "grpc-native", "full")},
        metrics={
            "unprotected": {"dependency_calls": 100},
            "retry-only": {"dependency_calls": 297},
            "grpc-native": {"dependency_calls": 120},
            "full": {"dependency_calls": 6},
        },
    )
    (ax,) = calls_figure(result).axes
    marks = sorted(line.get_ydata()[0] for line in _gids(ax, "seed-reference"))
    assert marks == [14, 100, 300], "grpc-native has no seed figure"
    assert sorted(p.get_height() for p in _rects(ax)) == [6, 100, 120, 297]


def test_breaker_moves_are_read_from_the_spans_and_marked(tmp_path: Path) -> None:
    outcomes = _outcomes([5] * 10)
    tripping = outcomes[3]  # started 0.3 s into the load; its breaker opened 40 ms later
    start_ns = 1_700_000_000_000_000_000
    span = {
        "trace_id": tripping.trace_id,
        "span_id": "a" * 16,
        "parent_span_id": None,
        "name": "Recv.mesh.v1.Gateway/GetHome",
        "start_ns": start_ns,
        "end_ns": start_ns + 50_000_000,
        "events": [
            {
                "name": "breaker opened",
                "time_ns": start_ns + 40_000_000,
                "attributes": {"mesh.breaker_scope": "/mesh.v1.RecommendationService/Recommend"},
            }
        ],
    }
    other = {**span, "trace_id": "f" * 32, "events": []}
    (tmp_path / "gateway.jsonl").write_text(
        "\n".join(json.dumps(s, separators=(",", ":")) for s in (other, span)) + "\n"
    )
    moves = breaker_moves(tmp_path, {"full/fault": outcomes})
    assert [(round(m.at_s, 3), m.to, m.scope) for m in moves["full/fault"]] == [
        (0.34, "opened", "Recommend")
    ]
    result = _result("provider-outage", {"full": outcomes})
    (ax,) = latency_figure(result, moves).axes
    (line,) = _gids(ax, "breaker-opened")
    assert line.get_xdata()[0] == pytest.approx(0.34)


def _receipt_results() -> list[ExperimentResult]:
    return [
        _scenario(
            "receipt-backoff",
            {
                "transient-421": (
                    {"attempts_made": 3},
                    [
                        {
                            "case": "421-twice",
                            "state": "completed",
                            "attempts": 3,
                            "computed_s": [0, 0.2, 0.6],
                            "measured_s": [0, 0.21, 0.63],
                        }
                    ],
                ),
                "permanent-550": (
                    {"attempts_made": 1},
                    [{"case": "550", "state": "failed", "attempts": 1, "computed_s": [0]}],
                ),
            },
        ),
        _scenario(
            "receipt-throughput",
            {
                "concurrency-1": ({"measured_ms": 3300, "theory_ms": 3000}, []),
                "concurrency-10": ({"measured_ms": 420, "theory_ms": 300}, []),
            },
        ),
        _scenario(
            "worker-crash",
            {
                "kill-9": (
                    {"charges": 2, "receipts": 2, "duplicates": 0, "missing": 0},
                    [
                        {"job": "receipt-a", "rerun_after_s": 4.1, "after_kill_s": 2.2},
                        {"job": "receipt-b", "rerun_after_s": 4.0, "after_kill_s": 2.1},
                    ],
                )
            },
        ),
        _scenario(
            "duplicate-enqueue",
            {"same-job-id": ({"enqueued": 4, "jobs": 1, "runs": 1, "receipts": 1}, [])},
        ),
    ]


def test_the_receipt_experiments_draw_what_they_measure() -> None:
    figures = {r.name: scenario_figures(r) for r in _receipt_results()}
    assert {n: list(f) for n, f in figures.items()} == {
        "receipt-backoff": ["attempts.png"],
        "receipt-throughput": ["throughput.png"],
        "worker-crash": ["recovery.png"],
        "duplicate-enqueue": ["dedupe.png"],
    }
    attempts: Figure = figures["receipt-backoff"]["attempts.png"]
    first = attempts.axes[0]
    measured = [ln for ln in first.lines if ln.get_gid() != "schedule"]
    assert list(cast(Any, measured[0].get_ydata())) == [0, 0.21, 0.63]
    assert list(_gids(first, "schedule")[0].get_ydata()) == [0, 0.2, 0.6]
    (tput,) = figures["receipt-throughput"]["throughput.png"].axes
    assert sorted(p.get_height() for p in _rects(tput)) == [300, 420, 3000, 3300]
    assert sorted(ln.get_ydata()[0] for ln in _gids(tput, "seed-reference")) == [
        300,
        422,
        3000,
        3722,
    ]
    (recovery,) = figures["worker-crash"]["recovery.png"].axes
    assert [p.get_width() for p in _rects(recovery) if p.get_gid() is None][:2] == [2.2, 2.1]
    assert _gids(recovery, "seed-reference"), "the seed's 2.136 s"
    assert "2 receipts for 2 charges, 0 duplicates" in recovery.get_title(loc="left")
    (dedupe,) = figures["duplicate-enqueue"]["dedupe.png"].axes
    assert sorted(p.get_height() for p in _rects(dedupe)) == [1, 1, 1, 4]
    assert sorted(ln.get_ydata()[0] for ln in _gids(dedupe, "seed-reference")) == [1, 1]


def test_plots_are_written_without_library_warnings(tmp_path: Path) -> None:
    results = [
        *_receipt_results(),
        _result(OWN_CAPACITY, {"shedding": _outcomes([20] * 5)}),
        _result("fallback-trap", {"per-method-sequential": _outcomes([3] * 5, code="UNAVAILABLE")}),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for r in results:
            folder = tmp_path / Path(r.name).stem
            folder.mkdir()
            written = plot(r, folder, traces_dir=tmp_path / "no-traces")
            assert written and all(p.stat().st_size > 1000 for p in written)


def test_the_index_links_every_report_plot_and_trace(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    outage = _result("provider-outage", {"full": _outcomes([5, 900], code="UNAVAILABLE")})
    dedupe = _receipt_results()[3]
    for r in (outage, dedupe):
        write_report(r, reports / r.name)
    html = write_index(reports, Path("var/chaos")).read_text()
    links = re.findall(r'(?:href|src)="([^"#]+)"', html)
    for wanted in (
        "provider-outage/report.md",
        "provider-outage/result.json",
        "provider-outage/latency.png",
        "provider-outage/calls.png",
        "duplicate-enqueue/dedupe.png",
    ):
        assert wanted in links
    assert all((reports / link).is_file() for link in links), "every link leads to a file"
    assert all(o.trace_id in html for o in outage.variants[0].phases["fault"].load.outcomes)
    assert "<pre>" in html and "hypothes" in html
    assert "cdn" not in html.lower() and "<script" not in html


def test_the_recovery_phase_has_its_own_panel_where_the_breaker_closes() -> None:
    from grpc_resilience_mesh.chaos.report.breaker_marks import BreakerMove

    result = _result("provider-outage", {"full": _outcomes([1000, 4, 3])})
    recovery = PhaseResult(LoadResult(_outcomes([30, 20, 20]), 0.3), Snapshot(), {})
    result.variants[0].phases["recovery"] = recovery
    moves = {
        "full/recovery": [BreakerMove(0.03, "half-open", "*"), BreakerMove(0.05, "closed", "*")]
    }
    fault, healed = latency_figure(result, moves).axes
    assert healed.get_title(loc="left") == "full (recovery) - user wait per request"
    assert not _gids(healed, "fault-window"), "the faults were gone"
    assert [ln.get_xdata()[0] for ln in _gids(healed, "breaker-closed")] == [0.05]
    assert _gids(healed, "breaker-half-open") and not _gids(fault, "breaker-closed")
