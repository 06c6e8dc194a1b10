"""An experiment's report folder: result.json, the plots and report.md (the terminal's table
and verdicts, recorded, with the trace ids worth opening)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from grpc_resilience_mesh.chaos.report.broken_traces import render_broken
from grpc_resilience_mesh.chaos.report.plots import plot
from grpc_resilience_mesh.chaos.report.result_json import notable_traces, to_json
from grpc_resilience_mesh.chaos.report.tables import print_result, run_line
from grpc_resilience_mesh.chaos.results import ExperimentResult


def write_report(result: ExperimentResult, out_dir: Path, traces_dir: Path | None = None) -> Path:
    """report.md, result.json and the plots; `traces_dir` (the spans) adds breaker moves."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "result.json").write_text(json.dumps(to_json(result), indent=1))
    images = plot(result, out_dir, traces_dir)
    console = Console(record=True, width=160, file=io.StringIO())
    print_result(console, result)
    lines = [
        f"# {result.name}: {result.experiment.title}",
        "",
        f"**Hypothesis.** {result.experiment.hypothesis}",
        "",
        f"**Seed lesson.** {result.experiment.lesson}" if result.experiment.lesson else "",
        "",
        f"**Verdict.** {result.verdict}"
        + (f" in all {len(result.repeats)} runs" if len(result.repeats) > 1 and result.held else "")
        + (
            f" (held in {sum(r.held_once for r in result.repeats)} of {len(result.repeats)} runs)"
            if len(result.repeats) > 1 and not result.held
            else ""
        ),
        "",
        f"**Run.** {run_line(result)}",
        "",
        "```",
        console.export_text(),
        "```",
        "",
        *[f"![{p.stem}]({p.name})" for p in images],
        "",
    ]
    lines += [
        "## Traces worth opening",
        "",
        "`mesh traces TRACE_ID --dir <state dir>/traces` shows one as a waterfall.",
        "",
    ]
    for v in result.variants:
        for phase_name, phase in v.phases.items():
            for kind, ids in notable_traces(phase).items():
                if ids:
                    lines.append(
                        f"- {v.variant.name} / {phase_name}, {kind}: "
                        + ", ".join(f"`{i}`" for i in ids)
                    )
    lines.append("")
    lines += render_broken(result)
    path = out_dir / "report.md"
    path.write_text("\n".join(lines))
    return path
