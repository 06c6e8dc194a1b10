"""`mesh chaos compare BASELINE CURRENT`: parses, runs the comparison
(grpc_resilience_mesh/chaos/compare/) and prints it; exit 1 on a regression, 2 on bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from grpc_resilience_mesh.chaos.compare.decide import Check, compare
from grpc_resilience_mesh.chaos.compare.inputs import (
    CompareInputError,
    Side,
    load_side,
    result_files,
)
from grpc_resilience_mesh.chaos.compare.output import (
    RULE,
    comparison_json,
    effect_text,
    figures,
    junit_suites,
)
from grpc_resilience_mesh.chaos.report.junit import write_junit
from grpc_resilience_mesh.cli.chaos_cmd import console, refuse
from grpc_resilience_mesh.cli.json_out import JsonOpt, human_output_to_stderr, write_json

STYLE = {"REGRESSED": "red", "IMPROVED": "green", "WITHIN NOISE": "", "NOT COMPARED": "yellow"}


def _sides(baseline: Path, current: Path, last: int) -> tuple[Side, Side]:
    cur = load_side(result_files(current, None, last))
    base = load_side(result_files(baseline, cur.experiment, last))
    if base.experiment != cur.experiment:
        raise CompareInputError(
            f"different experiments: baseline {base.experiment!r}, current {cur.experiment!r}"
        )
    for side, label in ((base, "baseline"), (cur, "current")):
        if side.runs < 2:
            raise CompareInputError(
                f"{label} {', '.join(map(str, side.files))}: {side.runs} run, no repeats; "
                "run `mesh chaos run NAME --repeat 3` (or pass a folder of earlier runs)"
            )
    return base, cur


def _table(checks: list[Check]) -> Table:
    table = Table("verdict", "check", "baseline", "current", "effect", "test")
    for c in checks:
        style = STYLE[c.status]
        mark = f"[{style}]{c.status}[/{style}]" if style else c.status
        table.add_row(
            mark,
            escape(c.name),
            figures(c, c.baseline),
            figures(c, c.current),
            effect_text(c),
            escape(c.test),
        )
    return table


def _print(base: Side, cur: Side, checks: list[Check]) -> None:
    console.print(
        f"{escape(cur.experiment)}: baseline {base.runs} runs ({len(base.files)} files), "
        f"current {cur.runs} runs ({len(cur.files)} files)"
    )
    console.print(_table(checks))
    console.print(f"decided by: {escape(RULE)}", soft_wrap=True)
    counts = {s: sum(c.status == s for c in checks) for s in STYLE}
    console.print(", ".join(f"{n} {s.lower()}" for s, n in counts.items() if n))


def compare_command(
    baseline: Annotated[
        Path,
        typer.Argument(help="result.json, a run's report folder, or a folder of earlier runs."),
    ],
    current: Annotated[Path, typer.Argument(help="result.json or a run's report folder.")],
    last: Annotated[
        int,
        typer.Option(min=1, help="From a folder of earlier runs: the last N that held."),
    ] = 5,
    json_path: JsonOpt = None,
    junit: Annotated[
        Path | None,
        typer.Option("--junit", metavar="FILE", help="Write the checks as JUnit XML to FILE."),
    ] = None,
) -> None:
    """Compare repeated runs against a baseline; exit 1 on a regression, 2 on bad input.

    Each expectation's runs (`mesh chaos run NAME --repeat N`) and each phase's p50 and p95
    latency are judged IMPROVED, REGRESSED or WITHIN NOISE by a stated test, printed with the
    effect and the p-value or interval (docs/chaos-compare.md).
    """
    try:
        base, cur = _sides(baseline, current, last)
    except CompareInputError as err:
        refuse(err)
    checks = compare(base, cur)
    with human_output_to_stderr(json_path, console):
        _print(base, cur, checks)
        if junit is not None:
            write_junit(junit, junit_suites(base, cur, checks), "mesh chaos compare")
            console.print(f"wrote {escape(str(junit))}")
    if json_path is not None:
        write_json(json_path, comparison_json(base, cur, checks))
    if any(c.status == "REGRESSED" for c in checks):
        raise typer.Exit(1)
