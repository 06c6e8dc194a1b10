"""SIGTERM and SIGHUP stop a run the way Ctrl-C does: one way out for `mesh chaos run`,
`mesh demo` and `mesh soak`.

`timeout`, CI cancellation, `kill` and systemd send SIGTERM; a closed terminal sends SIGHUP.
Python's default for both ends the process at once with no `finally` run: the run's toxics,
app faults and swapped policy stayed on a target mesh, and its own mesh's processes (each in
a session of its own) stayed up holding their ports. Here SIGINT, SIGTERM and SIGHUP take one
path: the first cancels the run's main task (or raises `Interrupted` where no loop runs), the
runner removes its faults and puts the policy back, the command stops its own mesh, and only
then exits 128 + the signal's number (130, 143, 129). A second signal within FORCE_WINDOW_S of
the one before exits at once, saying what may be left behind; a later one only says the
cleanup goes on (CI sends SIGINT, then SIGTERM 7.5 s later: that one must not cut the
cleanup short). A signal the command inherited as ignored (`nohup`, a background job's
SIGINT) stays ignored.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, NoReturn, Self, TypeVar

import typer
from rich.console import Console

from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.launch.mesh import Mesh

T = TypeVar("T")
FORCE_WINDOW_S = 5.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """The run was stopped by `signum`; raised where Ctrl-C raises KeyboardInterrupt."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(err: KeyboardInterrupt) -> int:
    """128 + the number of the signal that stopped the run (a bare KeyboardInterrupt: SIGINT)."""
    return 128 + (err.signum if isinstance(err, Interrupted) else signal.SIGINT)


class StopSignals:
    """While entered, SIGINT, SIGTERM and SIGHUP stop the run as Ctrl-C does; on the way out
    an interrupted run says `done` and exits 128 + the signal (typer.Exit)."""

    def __init__(
        self,
        console: Console,
        done: str,
        left_behind: Callable[[], list[str]],
        *,
        clock: Callable[[], float] = time.monotonic,
        force_exit: Callable[[int], NoReturn] = os._exit,
    ) -> None:
        self.console = console
        self.done = done
        self.left_behind = left_behind
        self.signum: int | None = None
        self._clock = clock
        self._exit = force_exit
        self._last = 0.0
        self._previous: dict[int, Any] = {}
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cleaning = False

    def __enter__(self) -> Self:
        for sig in STOP_SIGNALS:
            previous = signal.getsignal(sig)
            if previous is not signal.SIG_IGN:
                self._previous[sig] = previous
                signal.signal(sig, self._on_signal)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()
        if kind is None and self.signum is not None:
            err = Interrupted(self.signum)  # one that came during `cleaning()`
        if isinstance(err, KeyboardInterrupt):
            by = f" by {signal.Signals(self.signum).name}" if self.signum else ""
            self.console.print(f"[yellow]interrupted{by}: {self.done}[/yellow]")
            raise typer.Exit(exit_code(err)) from None

    @contextmanager
    def cleaning(self) -> Iterator[None]:
        """A cleanup on the normal way out (the mesh's stop): a first signal now is not
        raised into it, only remembered; the command still exits 128 + the signal after."""
        self._cleaning = True
        try:
            yield
        finally:
            self._cleaning = False

    def run(self, main: Coroutine[Any, Any, T]) -> T:
        """asyncio.run(main), whose task the first signal cancels (as asyncio does on Ctrl-C:
        every `finally` of the run runs); Interrupted once it has unwound."""
        try:
            result = asyncio.run(self._main(main))
        except asyncio.CancelledError:
            if self.signum is None:
                raise
            raise Interrupted(self.signum) from None
        if self.signum is not None:
            raise Interrupted(self.signum)
        return result

    async def _main(self, main: Coroutine[Any, Any, T]) -> T:
        self._task, self._loop = asyncio.current_task(), asyncio.get_running_loop()
        try:
            return await main
        finally:
            self._task = None

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        now, name = self._clock(), signal.Signals(signum).name
        if self.signum is None:
            self.signum, self._last = signum, now
            _say(
                f"{name}: cleaning up; send it again within {FORCE_WINDOW_S:.0f} s to stop at once"
            )
            self._interrupt(signum)
            return
        if now - self._last <= FORCE_WINDOW_S:
            self._force(signum)
        self._last = now
        _say(f"{name}: still cleaning up; again within {FORCE_WINDOW_S:.0f} s stops at once")

    def _interrupt(self, signum: int) -> None:
        task, loop = self._task, self._loop
        if task is not None and loop is not None and not task.done():
            task.cancel()
            loop.call_soon_threadsafe(lambda: None)  # wakes a loop asleep in select()
            return
        if not self._cleaning:
            raise Interrupted(signum)

    def _force(self, signum: int) -> NoReturn:
        left = self.left_behind()
        lines = [f"{signal.Signals(signum).name} again: stopped at once, the cleanup unfinished"]
        if left:
            lines += ["it may have left behind:", *(f"  - {item}" for item in left)]
        _say("\n".join(lines))
        self._exit(128 + signum)


def _say(text: str) -> None:
    """To stderr, unbuffered: a handler that wrote through sys.stderr while the interrupted
    code was writing to it would raise a reentrant-call RuntimeError."""
    os.write(2, f"\n{text}\n".encode())


def mesh_left_behind(mesh: Mesh) -> list[str]:
    """What a forced exit may leave of a mesh this command started: its running processes."""
    pids = [str(p.popen.pid) for p in list(mesh.procs) if _running(p.popen.pid)]
    if not pids:
        return []
    return [
        f"the mesh's processes, still holding their ports: PIDs {' '.join(pids)} "
        f"(stop them: kill {' '.join(pids)}; their state: {mesh.state_dir})"
    ]


def target_left_behind(target: Target) -> list[str]:
    """What a forced exit may leave on a mesh this command did not start: the run's faults
    and a variant's policy (put back by `mesh fault reset` and `mesh restart SERVICE`)."""
    where = [f"toxics on Toxiproxy {target.toxiproxy}"] if target.toxiproxy else []
    where += ["app faults on the services' FaultAdmin"] if target.admin else []
    left = [f"this run's faults ({', '.join(where)}): `mesh fault reset` removes them"]
    if target.policy and target.admin:
        left.append(
            f"a variant's policy instead of {target.policy} on its services: "
            "`mesh restart SERVICE` starts one again on it"
        )
    return left


def _running(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not), read without waiting: a signal handler may be
    running inside a wait on it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
