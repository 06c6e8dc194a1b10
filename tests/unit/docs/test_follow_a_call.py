"""docs/architecture.md's "Follow a call" is consistent with itself: both routes are there,
every file listed exists, each group's count is the files it names and each route's totals
their sum. That the lists are what a real call crosses is tests/integration/mesh/
test_get_home_route.py's and tests/e2e/test_chaos_run_route.py's to check."""

from __future__ import annotations

from tests.support.doc_routes import ROOT, chaos_run_route, get_home_route, routes


def test_both_routes_are_there() -> None:
    titles = sorted(t.split(",")[0] for t in routes())
    assert titles == ["GetHome", "`mesh chaos run FILE`"]


def test_every_file_listed_exists_and_is_listed_once() -> None:
    for title, route in routes().items():
        assert [f for f in route.files if not (ROOT / f).is_file()] == [], title
        assert len(set(route.files)) == len(route.files), title


def test_each_group_counts_the_files_it_names() -> None:
    wrong = [
        (g.folder, g.count, len(g.files))
        for route in routes().values()
        for g in route.groups
        if g.count != len(g.files)
    ]
    assert wrong == []


def test_the_totals_are_the_sums_of_the_lists() -> None:
    home = get_home_route()
    assert home.totals == (len(home.tracing_off), len(home.with_trace_files))
    run = chaos_run_route()
    assert run.totals == (len(run.files),)
