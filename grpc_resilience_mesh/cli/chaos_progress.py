"""What `mesh chaos run` and `mesh demo` print while a session runs
(grpc_resilience_mesh/chaos/session/session.py): the mesh's start with its time, two lines of
progress under the reports, each experiment's rule and tables, the traces being indexed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.report.tables import print_result
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.run.eta import Eta, about, kind
from grpc_resilience_mesh.chaos.run.plan import plan


class RunProgress:
    """Two lines under the reports: the whole run ("experiment 3/13 ..., about 2 min left")
    and the current step (the runner's and the scenarios' progress callback)."""

    def __init__(self, progress: Progress, experiments: list[Experiment]) -> None:
        self.progress = progress
        planned = plan((str(n), exp) for n, exp in enumerate(experiments))
        self.eta = Eta([p.total_s for p in planned], [kind(e) for e in experiments])
        self.count = len(experiments)
        self.started = time.monotonic()
        self.run = progress.add_task("", total=self.count, left=self.left)
        self.step_task = progress.add_task("", total=None, left=lambda: "")
        self.explained: set[str] = set()
        """The tables' legend entries printed so far: each once per run."""

    def left(self) -> str:
        return about(self.eta.left_s(time.monotonic() - self.started))

    def start(self, n: int, name: str) -> None:
        self.started = time.monotonic()
        self.progress.update(
            self.run, description=f"experiment {n}/{self.count}: {name}", completed=n - 1
        )
        self.progress.update(
            self.step_task, description=f"{name}: starting", completed=0, total=None
        )

    def experiment(self, n: int, total: int, name: str, round_: int, repeat: int) -> None:
        """The progress line and a rule naming the experiment (and its run, with --repeat)."""
        self.start(n, name if repeat == 1 else f"{name} (run {round_}/{repeat})")
        label = name if repeat == 1 else f"{name}: run {round_}/{repeat}"
        self.progress.console.rule(f"{n}/{total} {label}")

    def step(self, label: str, done: int, total: int) -> None:
        self.progress.update(self.step_task, description=label, completed=done, total=total)

    def ran(self, result: ExperimentResult) -> None:
        print_result(self.progress.console, result, self.explained)

    def finish(self) -> None:
        self.eta.finished(time.monotonic() - self.started)
        self.progress.update(self.run, completed=len(self.eta.actual))


class _LeftColumn(ProgressColumn):
    """The task's `left` field, computed at each refresh so it moves between callbacks."""

    def render(self, task: Task) -> Text:
        left = task.fields.get("left")
        return Text(left() if callable(left) else "", style="progress.remaining")


class ConsoleView:
    """The session told on `console` (grpc_resilience_mesh.chaos.session.view.SessionView)."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def starting_mesh(self) -> AbstractContextManager[object]:
        return self.console.status("starting the embedded mesh...")

    def mesh_started(self, took_s: float) -> None:
        self.console.print(f"started the embedded mesh in {took_s:.1f} s")

    @contextmanager
    def rounds(self, experiments: list[Experiment]) -> Iterator[RunProgress]:
        with self._progress() as progress:
            yield RunProgress(progress, experiments)

    def indexing_traces(self) -> AbstractContextManager[object]:
        return self.console.status("indexing the traces...")

    def _progress(self) -> Progress:
        return Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            _LeftColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
