"""What `mesh chaos run` and `mesh demo` print while a session runs
(grpc_resilience_mesh/chaos/session/session.py): the mesh's start with its time, two lines of
progress under the reports, each experiment's rule and tables, the traces being indexed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

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
from grpc_resilience_mesh.chaos.run.eta import Eta, about
from grpc_resilience_mesh.chaos.run.plan import plan
from grpc_resilience_mesh.chaos.run.xds_wiring import xds_missing


class RunProgress:
    """Two lines under the reports: the whole run ("experiment 3/13 ..., about 2 min left")
    and the current step (the runner's and the scenarios' progress callback)."""

    def __init__(self, progress: Progress, experiments: list[Experiment]) -> None:
        self.progress = progress
        runs_xds = not xds_missing()
        self.eta = Eta.of(plan(((str(n), e) for n, e in enumerate(experiments)), False, runs_xds))
        self.count = len(experiments)
        self.started = time.monotonic()
        self.run = progress.add_task("", total=self.count, left=self.left)
        self.step_task = progress.add_task("", total=None, left=lambda: "")
        self.explained: set[str] = set()
        """The tables' legend entries printed so far: each once per run."""
        self.counting = False
        """Whether the step line's count is this experiment's (rich keeps a task's last total)."""

    def left(self) -> str:
        return about(self.eta.left_s(time.monotonic() - self.started))

    def line(self) -> str:
        """The two lines as one plain line, for output that is not a terminal."""
        run, step = self.progress.tasks[self.run], self.progress.tasks[self.step_task]
        done = f" {step.completed:.0f}/{step.total:.0f}" if step.total and self.counting else ""
        what = run.description or "preparing the run"
        return f"{what}; {step.description}{done}; {self.left()}"

    def start(self, n: int, name: str) -> None:
        self.started = time.monotonic()
        self.counting = False
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
        self.counting = True
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


PLAIN_EVERY_S = 5.0
"""How often a plain progress line is printed where the output is not a terminal: half the 10 s a
reader of a piped log (tee, CI) may wait for a sign of life, the other half for a loaded
machine's scheduling and the pipe's reader."""


class PlainTicker:
    """A plain line every `every_s` from a thread, where rich's live display draws nothing (a
    pipe, a file, CI): rich's Progress and status redraw only on a terminal, and a piped run
    was silent between two tables for up to 30 s."""

    def __init__(
        self, console: Console, line: Callable[[], str], every_s: float = PLAIN_EVERY_S
    ) -> None:
        self.console, self.line, self.every_s = console, line, every_s
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="plain-progress", daemon=True)

    def __enter__(self) -> PlainTicker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            elapsed = time.monotonic() - self.started
            self.console.print(
                f"[{elapsed:.0f} s] {self.line()}", markup=False, highlight=False, soft_wrap=True
            )


class ConsoleView:
    """The session told on `console` (grpc_resilience_mesh.chaos.session.view.SessionView):
    live lines on a terminal, a plain line every PLAIN_EVERY_S elsewhere."""

    def __init__(self, console: Console, every_s: float = PLAIN_EVERY_S) -> None:
        self.console = console
        self.every_s = every_s

    def _plain(self, line: Callable[[], str]) -> AbstractContextManager[object]:
        if self.console.is_interactive:
            return nullcontext()
        return PlainTicker(self.console, line, self.every_s)

    @contextmanager
    def _waiting(self, what: str) -> Iterator[None]:
        """`what` while it lasts. Piped, it is said at once too: a ticker's first line comes
        `every_s` after it starts, so two waits one after the other (the mesh stopping, the
        traces indexed) could leave a piped log silent for up to twice that."""
        if not self.console.is_interactive:
            self.console.print(what, markup=False, highlight=False)
        with self.console.status(what), self._plain(lambda: what):
            yield

    def starting_mesh(self) -> AbstractContextManager[object]:
        return self._waiting("starting the embedded mesh...")

    def mesh_started(self, took_s: float) -> None:
        self.console.print(f"started the embedded mesh in {took_s:.1f} s")

    def stopping_mesh(self) -> AbstractContextManager[object]:
        return self._waiting("stopping the embedded mesh...")

    @contextmanager
    def rounds(self, experiments: list[Experiment]) -> Iterator[RunProgress]:
        with self._progress() as progress:
            shown = RunProgress(progress, experiments)
            with self._plain(shown.line):
                yield shown

    def indexing_traces(self) -> AbstractContextManager[object]:
        return self._waiting("indexing the traces...")

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
