"""The final verdict leads with what missed and why (never a metric that passed): the screen
opens with the misses in lesson order, then the table of all; the index page is in lesson
order under a held/missed summary, and the capacity line names the request mix its figure was
measured for."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from grpc_resilience_mesh.chaos.experiment.lesson_order import LESSON_ORDER
from grpc_resilience_mesh.chaos.report.index import write_index
from grpc_resilience_mesh.chaos.report.result_json import to_json
from grpc_resilience_mesh.chaos.report.tables import print_result, showed
from grpc_resilience_mesh.chaos.results import ExperimentResult, Verdict
from grpc_resilience_mesh.cli.chaos_verdict import verdict_screen
from tests.unit.chaos.render_fixtures import OWN_CAPACITY, demo_result

BACK = "a restarted replica serves again within 5 s of its kill, before the load ends"


def test_a_miss_is_what_showed_leads_with_never_a_metric_that_passed() -> None:
    result = demo_result("replica-loss")
    result.verdicts = [
        Verdict("ejection", "fault", "ejections", 0.0, ">= 0", True),
        Verdict(
            "ejection",
            "fault",
            "back_after_s",
            None,
            "<= 5",
            False,
            why="it comes back",
            note="profile-2 not back after 7.0 s",
        ),
    ]
    line = showed(result)
    assert line.startswith("missed: ejection back_after_s n/a: profile-2 not back after 7.0 s")
    assert "(want <= 5): it comes back" in line
    assert "ejections" not in line  # it passed


def test_a_held_result_still_shows_its_numbers() -> None:
    result = demo_result("provider-outage")
    result.verdicts = [Verdict("full", "fault", "p99_ms", 1.0, "<= 10", True)]
    assert not showed(result).startswith("missed")


def test_the_index_is_in_lesson_order_with_the_misses_on_top(tmp_path: Path) -> None:
    names = [*sorted(LESSON_ORDER[:5], reverse=True), "a-users-own"]
    for name in names:
        result = demo_result(name if name in LESSON_ORDER else "pushback")
        result.verdicts = [
            Verdict("full", "fault", "p99_ms", 99.0, "<= 10", name != "pushback", why="fast")
        ]
        (tmp_path / name).mkdir()
        (tmp_path / name / "result.json").write_text(json.dumps(to_json(result, samples=False)))
    page = write_index(tmp_path).read_text()
    sections = [page.index(f'<section id="{n}">') for n in (*LESSON_ORDER[:5], "a-users-own")]
    assert sections == sorted(sections), "lesson order, a user's own last"
    top = page[: sections[0]]
    assert "5 of 6 hypotheses held" in top
    assert top.count('class="held">held') == 5 and top.count('class="failed">missed') == 1
    assert "full p99_ms 99 (want &lt;= 10): fast" in top


def test_the_capacity_line_names_the_request_mix() -> None:
    result = demo_result(OWN_CAPACITY)
    result.capacity = {"capacity_per_s": 432.6, "capacity_p99_ms": 100.4}
    console = Console(width=200, record=True, file=io.StringIO())
    print_result(console, result)
    mix = "+".join(result.experiment.load.rpc)
    assert result.experiment.load.capacity_per_experiment
    assert f"capacity 433 req/s for {mix} (measured right before this experiment" in (
        console.export_text()
    )


def _not_back(measured: float | None) -> Verdict:
    note = "" if measured is not None else "profile-2 not back after 7.0 s"
    ok = measured is not None and measured <= 5
    return Verdict("ejection", "fault", "back_after_s", measured, "<= 5", ok, why=BACK, note=note)


def _run_in_this_order() -> list[ExperimentResult]:
    """Five results in the order a user named them (not the lesson's): two held, and three
    missed: a bound, an expectation that met no fault, and an abort."""
    results = {n: demo_result(n) for n in ("replica-loss", "deadline-budget", "provider-outage")}
    results |= {n: demo_result(n) for n in ("pushback", "worker-crash")}
    for name in ("deadline-budget", "worker-crash"):
        results[name].verdicts = [Verdict("full", "fault", "p99_ms", 1.0, "<= 10", True)]
    results["replica-loss"].verdicts = [
        Verdict("ejection", "fault", "ejections", 0.0, ">= 0", True),
        _not_back(None),
    ]
    results["provider-outage"].verdicts = [
        Verdict("unprotected", "fault", "dependency_calls", 0.0, ">= 300", False, void=True)
    ]
    results["pushback"].verdicts = []
    results["pushback"].aborted = "steady state before the faults: 12% errors (want <= 1%)"
    return list(results.values())


def _screen(results: list[ExperimentResult], width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(verdict_screen(results, width))
    text = console.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= width
    return text


@pytest.mark.parametrize("width", [80, 120])
def test_the_verdict_screen_opens_with_what_missed_and_why_in_lesson_order(width: int) -> None:
    text = _screen(_run_in_this_order(), width)
    assert text.splitlines()[0].rstrip() == "missed: 3 of 5 hypotheses did not hold"
    table = text.index("what it showed")
    block = " ".join(text[:table].split())
    at = [block.index(f" {name} ") for name in ("pushback", "provider-outage", "replica-loss")]
    assert at == sorted(at), "the misses in the lesson's order, not the run's"
    assert "deadline-budget" not in block and "worker-crash" not in block  # they held
    assert "pushback aborted: steady state before the faults: 12% errors (want <= 1%)" in block
    assert (
        "provider-outage unprotected/fault dependency_calls = 0 (want >= 300) "
        "VOID: the variant met no fault"
    ) in block
    assert (
        "replica-loss ejection/fault back_after_s = n/a: profile-2 not back after 7.0 s "
        f"(want <= 5) why: {BACK}"
    ) in block
    assert "ejections" not in block  # it passed
    rows = " ".join(text[table:].split())
    for name in ("replica-loss", "deadline-budget", "provider-outage", "pushback", "worker-crash"):
        assert f" {name} " in f" {rows} ", "then every experiment, held or not"
    assert " ".join(text.split()).count(BACK) == 1, "a miss's why is said once, above the table"


def test_a_miss_in_some_of_the_runs_shows_its_spread_and_why() -> None:
    runs = []
    for measured in (3.2, 7.0, 4.1):
        run = demo_result("replica-loss")
        run.verdicts = [_not_back(measured)]
        runs.append(run)
    runs[-1].repeats = runs
    block = " ".join(_screen([runs[-1]], 80).split("what it showed")[0].split())
    assert (
        f"replica-loss ejection/fault back_after_s = 4.1 [3.2-7] held 2/3 (want <= 5) why: {BACK}"
    ) in block


def test_when_every_hypothesis_held_the_screen_is_the_table() -> None:
    held = demo_result("provider-outage")
    held.verdicts = [Verdict("full", "fault", "p99_ms", 1.0, "<= 10", True)]
    text = _screen([held], 80)
    assert text.lstrip().startswith("verdict") and "missed" not in text
