"""The chaos tables as a run prints them: at COLUMNS=80 the median (p50) stays, at full width
every column shows, and the legend explains each abbreviated header once per run, not under
every table."""

from __future__ import annotations

import io

import pytest
from rich.console import Console, Group
from rich.progress import Progress
from rich.table import Table

from grpc_resilience_mesh.chaos.experiment.loading import catalogue
from grpc_resilience_mesh.chaos.report.tables import experiment_table, print_result
from grpc_resilience_mesh.cli.chaos_progress import RunProgress
from tests.unit.chaos.render_fixtures import demo_result

LOAD_TABLES = [
    p.stem for p, exp in catalogue() if exp.scenario is None and exp.sweep is None and exp.variants
]
FULL = 250
"""Wider than any load table (about 190 columns with every fate column)."""


def _console(monkeypatch: pytest.MonkeyPatch, columns: int) -> Console:
    monkeypatch.setenv("COLUMNS", str(columns))
    return Console(record=True, file=io.StringIO())


def _shown(name: str, console: Console) -> tuple[list[str], str]:
    """The headers of `name`'s table at the console's width (wrapped lines joined), and all
    that print_result prints there."""
    result = demo_result(name, short=True)
    group = experiment_table(result, console.width)
    assert isinstance(group, Group) and isinstance(group.renderables[0], Table)
    headers = [" ".join(str(c.header).split()) for c in group.renderables[0].columns]
    print_result(console, result)
    return headers, console.export_text()


@pytest.mark.parametrize("name", LOAD_TABLES)
def test_p50_stays_at_80_columns(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    console = _console(monkeypatch, 80)
    assert console.width == 80
    headers, text = _shown(name, console)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "p50" in headers, name
    assert "p50" not in text.split("not shown at 80 columns:")[-1].split("\n")[0]


@pytest.mark.parametrize("name", LOAD_TABLES)
def test_every_column_shows_at_full_width(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    console = _console(monkeypatch, FULL)
    headers, text = _shown(name, console)
    assert "not shown at" not in text
    assert {"p50", "p95", "p99", "errors"} <= set(headers), headers


def _run(monkeypatch: pytest.MonkeyPatch, columns: int) -> str:
    """Every load experiment's table, printed as `mesh demo` prints them: one RunProgress."""
    console = _console(monkeypatch, columns)
    experiments = [exp for p, exp in catalogue() if p.stem in LOAD_TABLES]
    with Progress(console=console, auto_refresh=False) as progress:
        run = RunProgress(progress, experiments)
        for name in LOAD_TABLES:
            run.ran(demo_result(name, short=True))
    return console.export_text()


@pytest.mark.parametrize("columns", [80, FULL])
def test_the_legend_explains_each_header_once_per_run(
    columns: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = " ".join(_run(monkeypatch, columns).split())
    legends = [part.split(" not shown at ")[0] for part in text.split("legend: ")[1:]]
    entries = [e.strip() for legend in legends for e in legend.split(";")]
    assert entries and len(legends) < len(LOAD_TABLES)
    for needle in ("total ms = wall time of the load", "fate ok: answered whole, first try"):
        assert text.count(needle) <= 1, needle
    if columns == FULL:  # every column shows: the fate headers are explained, once
        assert text.count("f:ok = fate ok: answered whole, first try") == 1
