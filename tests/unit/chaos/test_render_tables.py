"""The experiment tables at 80 and 120 columns: every value whole, every line within the width."""

from __future__ import annotations

import io
import itertools
import re

import pytest
from rich.console import Console

from grpc_resilience_mesh.chaos.experiment.loading import catalogue
from grpc_resilience_mesh.chaos.experiment.metric_names import COUNTERS, LOAD
from grpc_resilience_mesh.chaos.report.table_fit import Column, FitTable
from grpc_resilience_mesh.chaos.report.tables import COLUMNS, print_result
from tests.unit.chaos.render_fixtures import demo_result

NAMES = [p.stem for p, _ in catalogue()]


def _render(name: str, width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    print_result(console, demo_result(name))
    return console.export_text()


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("name", NAMES)
def test_no_value_is_cut_and_every_line_fits(name: str, width: int) -> None:
    text = _render(name, width)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    result = demo_result(name)
    table_rows = [line.split() for line in text.splitlines()]
    for v in result.variants:  # variant names whole, each at the start of its row
        assert [v.variant.name] in [row[:1] for row in table_rows], v.variant.name
    left_out = text.split(f"not shown at {width} columns: ")[-1].split("\n")[0].split(", ")
    headers = {key: header for key, header, _ in COLUMNS}
    for ref in result.experiment.reference:  # the seed's figures whole (wrapped at spaces)
        for key, value in ref.values.items():
            if headers.get(key, key) in left_out:
                continue
            for word in str(value).split():
                assert re.search(rf"(^|\s){re.escape(word)}(\s|$)", text), (name, word)


@pytest.mark.parametrize("width", [80, 120])
def test_status_codes_stay_whole(width: int) -> None:
    text = _render("provider-outage", width)
    for code in ("DEADLINE_EXCEEDED 160", "RESOURCE_EXHAUSTED 160", "UNAVAILABLE 160"):
        assert code in text


def test_left_out_columns_are_named_and_abbreviations_explained() -> None:
    narrow, wide = _render("provider-outage", 80), _render("provider-outage", 120)
    assert "not shown at 80 columns:" in narrow
    assert "legend:" in narrow
    assert "dc = attempts that reached recommendation" in " ".join(narrow.split())
    shown_wide = wide.split("not shown at 120 columns:")[-1]
    # The wider terminal shows more of the columns the narrow one had to leave out.
    assert len(shown_wide.split(",")) < len(narrow.split("not shown at 80 columns:")[1].split(","))


def test_a_long_header_is_wrapped_or_abbreviated_never_its_values() -> None:
    table = FitTable([Column("variant", justify="left", keep=True), Column("giveup_last_s")])
    table.add_row("concurrency-10-limit-10ps", "3.125")
    console = Console(width=34, record=True, file=io.StringIO())
    console.print(table.render(34))
    text = console.export_text()
    assert "concurrency-10-limit-10ps" in text and "3.125" in text and "…" not in text
    assert "giveup_" in text or "gls = giveup_last_s" in text


def test_a_variant_run_under_its_demo_load_says_its_times_do_not_compare_with_the_seed() -> None:
    def render(short: bool) -> str:
        console = Console(width=120, record=True, file=io.StringIO())
        print_result(console, demo_result("provider-outage", short=short))
        return " ".join(console.export_text().split())

    demo, full = render(short=True), render(short=False)
    assert "retry-only: the demo's load (concurrency 100;" in demo
    assert "its counts compare with the seed's, its times do not" in demo
    assert "the demo's load" not in full


def test_a_variant_run_under_its_demo_faults_says_which_faults_ran() -> None:
    def render(short: bool) -> str:
        console = Console(width=120, record=True, file=io.StringIO())
        print_result(console, demo_result("flapping-dependency", short=short))
        return " ".join(console.export_text().split())

    demo, full = render(short=True), render(short=False)
    assert "full: the demo's faults (gateway_to_payment: down flapping 4.0s/4.0s 1-13 s;" in demo
    assert "the demo's faults" not in full


def test_columns_that_are_zero_everywhere_are_named_not_shown() -> None:
    result = demo_result("pushback")
    for v in result.variants:
        v.phases["fault"].metrics["shed"] = 0.0
        v.phases["fault"].metrics["full"] = 0.0  # no whole answer: worth a column of zeros
    console = Console(width=120, record=True, file=io.StringIO())
    print_result(console, result)
    text = console.export_text()
    assert "0 in every row: shed\n" in text
    header = next(line for line in text.splitlines() if line.startswith("variant"))
    assert header.split()[:3] == ["variant", "req", "full"]


@pytest.mark.parametrize("name", NAMES)
def test_the_seeds_measured_figures_stand_under_a_column_of_ours(name: str) -> None:
    """A seed figure keyed by a metric the load table does not show (the seed's `ok`, which
    counted whole answers, where our `ok` also counts degraded ones) would vanish unsaid."""
    result = demo_result(name)
    if result.experiment.scenario is not None:
        return
    keys = {key for key, _, _ in COLUMNS}
    for ref in result.experiment.reference:
        measured = set(ref.values) & {*LOAD, *COUNTERS}
        assert measured <= keys, (name, measured - keys)


def test_full_degraded_and_errors_add_up_to_req_in_every_row() -> None:
    result = demo_result("bulkhead-reject")
    console = Console(width=250, record=True, file=io.StringIO())
    print_result(console, result)
    lines = console.export_text().splitlines()
    header = next(line for line in lines if line.startswith("variant")).split()
    assert header[1:5] == ["req", "full", "degr", "errors"]
    starts = [i for i, line in enumerate(lines) if line.startswith("no-think-time")]
    assert starts
    for i in starts:  # the errors cell holds a status and its count per line
        row = lines[i].split()
        errors = [int(w) for line in lines[i : i + 4] for w in _codes(line)]
        assert int(row[2]) + int(row[3]) + sum(errors) == int(row[1]), lines[i : i + 4]


def _codes(line: str) -> list[str]:
    """The counts that follow a status code (an upper-case word) on a table line."""
    words = line.split()
    return [n for code, n in itertools.pairwise(words) if code.isupper() and n.isdigit()]
