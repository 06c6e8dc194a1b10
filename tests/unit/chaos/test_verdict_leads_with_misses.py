"""The final verdict leads with what missed and why (never a metric that passed), the index
page is in lesson order under a held/missed summary, and the capacity line names the request
mix its figure was measured for."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from chaos.experiment.lesson_order import LESSON_ORDER
from chaos.report.index import write_index
from chaos.report.result_json import to_json
from chaos.report.tables import print_result, showed
from chaos.results import Verdict
from tests.unit.chaos.render_fixtures import demo_result


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
    result = demo_result("load-shedding")
    result.capacity = {"capacity_per_s": 432.6, "capacity_p99_ms": 100.4}
    console = Console(width=200, record=True, file=io.StringIO())
    print_result(console, result)
    mix = "+".join(result.experiment.load.rpc)
    assert f"capacity 433 req/s for {mix} (measured once per run for that request mix" in (
        console.export_text()
    )
