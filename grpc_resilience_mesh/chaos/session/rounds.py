"""The rounds of a chaos run: each experiment in order, the whole list `repeat` times on the same
mesh, each result told to the view and its report submitted while the next one runs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Protocol

from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.session.report_writer import ReportWriter
from grpc_resilience_mesh.chaos.session.view import RoundsView

Resolved = list[tuple[str, Path, Experiment]]


class ExperimentRunner(Protocol):
    """What the rounds need of a runner (grpc_resilience_mesh.chaos.run.runner.Runner)."""

    async def run(self, name: str, path: Path, exp: Experiment) -> ExperimentResult: ...

    async def close(self) -> None: ...


async def run_rounds(
    runner: ExperimentRunner,
    experiments: Resolved,
    view: RoundsView,
    writer: ReportWriter,
    repeat: int = 1,
) -> list[ExperimentResult]:
    """Run the experiments in order, the whole list `repeat` times on the same mesh (capacity
    measured once, or per experiment where its load asks); each report shows every run so far.
    The last run of each is returned, carrying all its runs in `repeats`."""
    runs: dict[str, list[ExperimentResult]] = {}
    try:
        await _rounds(runner, experiments, view, writer, repeat, runs)
    finally:
        await runner.close()
    return [found[-1] for found in runs.values()]


async def _rounds(
    runner: ExperimentRunner,
    experiments: Resolved,
    view: RoundsView,
    writer: ReportWriter,
    repeat: int,
    runs: dict[str, list[ExperimentResult]],
) -> None:
    n = 0
    for round_ in range(1, repeat + 1):
        for name, path, exp in experiments:
            n += 1
            view.experiment(n, len(experiments) * repeat, name, round_, repeat)
            started = time.time()
            result = await runner.run(name, path, exp)
            ended = time.time()
            result.took_s = ended - started
            if repeat > 1:
                runs.setdefault(name, []).append(result)
                result.repeats = list(runs[name])
            else:
                runs[name] = [result]
            view.ran(result)
            writer.submit(result, started, ended)  # written while the next one runs
            view.finish()
