"""`mesh bench startup`'s figures: a median of fresh processes, shown as a markdown table."""

from __future__ import annotations

import sys

from bench.startup import Figure, command, table


def test_a_command_is_timed_as_the_median_of_fresh_runs() -> None:
    figure = command("python", [sys.executable, "-c", "pass"], runs=3)
    assert figure.runs == 3 and figure.wall_s > 0 and figure.cpu_s >= 0


def test_the_table_has_one_row_per_start() -> None:
    text = table([Figure("mesh --version", 0.21, 0.19, 5)])
    assert text.splitlines()[-1] == "| mesh --version | 0.21 | 0.19 | 5 |"
