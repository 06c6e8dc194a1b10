"""What a session tells the one who started it (a view), and how its asyncio work runs under
that caller's stop signals (a guard). The CLI's view prints and its guard turns Ctrl-C, SIGTERM
and SIGHUP into exit codes (grpc_resilience_mesh/cli/stop_signals.py); the defaults here say
nothing and run plainly, for a test or a program that calls the session as an API."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.results import ExperimentResult

if TYPE_CHECKING:
    from grpc_resilience_mesh.chaos.run.target import Target
    from grpc_resilience_mesh.launch.mesh import Mesh

T = TypeVar("T")


class RoundsView(Protocol):
    """Told as the rounds go: each experiment as it starts, its steps, its result."""

    def experiment(self, n: int, total: int, name: str, round_: int, repeat: int) -> None:
        """The `n`th of `total` runs starts: `name`, in round `round_` of `repeat`."""

    def step(self, label: str, done: int, total: int) -> None:
        """The runner's and the scenarios' progress within the experiment."""

    def ran(self, result: ExperimentResult) -> None:
        """The experiment's result, before its report is submitted."""

    def finish(self) -> None:
        """The experiment is done and its report submitted."""


class StartView(Protocol):
    """Told while the session starts its own mesh (nothing, when it attaches to one)."""

    def starting_mesh(self) -> AbstractContextManager[object]:
        """Entered while the embedded mesh starts."""

    def mesh_started(self, took_s: float) -> None:
        """The embedded mesh is up, after `took_s` seconds."""

    def stopping_mesh(self) -> AbstractContextManager[object]:
        """Entered while the embedded mesh stops (its services drain: seconds on a busy
        machine, which a piped log must not spend silent)."""


class SessionView(StartView, Protocol):
    """Everything a chaos run's session tells."""

    def rounds(self, experiments: list[Experiment]) -> AbstractContextManager[RoundsView]:
        """Entered around the rounds; `experiments`: every run planned, in order."""

    def indexing_traces(self) -> AbstractContextManager[object]:
        """Entered while the embedded mesh's spans are indexed, after it stopped."""


class Quiet:
    """A view that says nothing."""

    def starting_mesh(self) -> AbstractContextManager[object]:
        return nullcontext()

    def mesh_started(self, took_s: float) -> None:
        """Nothing to say."""

    def stopping_mesh(self) -> AbstractContextManager[object]:
        return nullcontext()

    @contextmanager
    def rounds(self, experiments: list[Experiment]) -> Iterator[RoundsView]:
        yield self

    def indexing_traces(self) -> AbstractContextManager[object]:
        return nullcontext()

    def experiment(self, n: int, total: int, name: str, round_: int, repeat: int) -> None:
        """Nothing to say."""

    def step(self, label: str, done: int, total: int) -> None:
        """Nothing to say."""

    def ran(self, result: ExperimentResult) -> None:
        """Nothing to say."""

    def finish(self) -> None:
        """Nothing to say."""


class Guard(Protocol):
    """Entered around the session's mesh; runs its asyncio work and its cleanups."""

    def __enter__(self) -> object: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def run(self, main: Coroutine[Any, Any, T]) -> T:
        """asyncio.run(main), or what stands for it under the caller's signals."""

    def cleaning(self) -> AbstractContextManager[None]:
        """Entered around stopping the mesh on the way out."""


GuardFor = Callable[["Mesh | None", "Target | None"], Guard]
"""The guard for a session's mesh: its own (Mesh), or the one it attached to (Target)."""


class PlainGuard:
    """No signal handling: asyncio.run, and a cleanup like any other code."""

    def __enter__(self) -> PlainGuard:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Nothing to restore."""

    def run(self, main: Coroutine[Any, Any, T]) -> T:
        return asyncio.run(main)

    def cleaning(self) -> AbstractContextManager[None]:
        return nullcontext()


def plain_guard(mesh: Mesh | None, target: Target | None) -> Guard:
    return PlainGuard()
