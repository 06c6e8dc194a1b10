"""Each experiment's report (report.md, its plots, result.json, the Chaos Toolkit journal and
the index) written by one worker process at idle priority while the next experiment runs.

Rendering took 0.3-1.2 s an experiment (matplotlib, mostly), about 14 s of a demo spent between
experiments with the mesh idle. The worker is a process of its own, not a thread: a thread
would share the runner's GIL (and a thread niced by the OS while it holds the GIL would stall
the runner behind it). At nice 19 it takes a core only when the mesh leaves one free: the CFS
scheduler gives it 15 of 1039 weight against one busy process at nice 0, so a CPU-bound
experiment loses about 1.5% of a core while a report renders. One worker, so the reports are
written in the order the experiments ran (the index reads them all). `close()` waits for every
report and raises the first error, naming its experiment, as rendering in line did.

Each report's folder is chosen here, in the runner's process and in the order the experiments ran
(grpc_resilience_mesh.chaos.report.index.claim_folder): one whose name another experiment's report
already holds goes to `<folder>-2`, and the terminal says so.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sys
import warnings
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from grpc_resilience_mesh.chaos.export.journal import to_journal
from grpc_resilience_mesh.chaos.report.index import (
    claim_folder,
    report_folder,
    report_owner,
    write_index,
)
from grpc_resilience_mesh.chaos.report.report_md import write_report
from grpc_resilience_mesh.chaos.results import ExperimentResult
from grpc_resilience_mesh.chaos.session.errors import ReportFailed
from grpc_resilience_mesh.launch.private import shared_files, user_umask

IDLE_NICE = 19


def write_reports(
    result: ExperimentResult,
    folder: Path,
    state_dir: Path,
    started: float,
    ended: float,
) -> Path:
    """One experiment's report folder (under reports/) written in full, and the index over
    every folder; the folder. Runs in the worker (or in line, where no worker could start)."""
    with warnings.catch_warnings(), shared_files():  # reports are meant to be shared
        warnings.simplefilter("ignore")  # a plot's library warning is not the user's
        write_report(result, folder, state_dir / "traces")
        journal = to_journal(result, started, ended)  # Chaos Toolkit's, for `chaos report`
        (folder / "journal.json").write_text(json.dumps(journal, indent=1))
        write_index(folder.parent, state_dir)
    return folder


def _failed(name: str, err: Exception) -> ReportFailed:
    return ReportFailed(f"the report of {name} could not be written: {type(err).__name__}: {err}")


def _idle_worker(umask: int) -> None:
    os.nice(IDLE_NICE)
    os.umask(umask)  # reports are shared: the user's umask, not the runner's private one
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # the runner's to handle
        signal.signal(sig, signal.SIG_IGN)  # (timeout and CI signal the whole process group)


@dataclass
class ReportWriter:
    """Reports written in the background, in order; `inline=True` writes each at once."""

    reports: Path
    state_dir: Path
    inline: bool = False
    _pool: ProcessPoolExecutor | None = None
    _pending: list[tuple[str, Future[Path]]] = field(default_factory=list)
    _claimed: dict[str, str] = field(default_factory=dict)

    def __enter__(self) -> ReportWriter:
        if not self.inline:
            self._pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),  # the runner has threads
                initializer=_idle_worker,
                initargs=(user_umask(),),
            )
        return self

    def folder(self, result: ExperimentResult) -> Path:
        """Where `result`'s report goes: its own folder, or the next free `-N` one, said on
        stderr, where another experiment's report holds it."""
        file = str(result.path.resolve())
        base = report_folder(self.reports, result.name)
        holder = self._claimed.get(base.name) or report_owner(base)
        folder = claim_folder(self.reports, result.name, file, self._claimed)
        if folder != base:
            print(
                f"{result.path}: its report goes to {folder}, since {base} holds the report "
                f"of {holder or 'an unnamed experiment'}",
                file=sys.stderr,
            )
        return folder

    def submit(self, result: ExperimentResult, started: float, ended: float) -> None:
        try:
            folder = self.folder(result)
        except (OSError, ValueError) as err:
            raise _failed(result.name, err) from err
        if self._pool is None:
            try:
                write_reports(result, folder, self.state_dir, started, ended)
            except Exception as err:
                raise _failed(result.name, err) from err
            return
        future = self._pool.submit(write_reports, result, folder, self.state_dir, started, ended)
        self._pending.append((result.name, future))

    def close(self) -> None:
        """Wait for every report (one failing stops none of the others); the first that
        failed raises ReportFailed."""
        first: ReportFailed | None = None
        try:
            for name, future in self._pending:
                try:
                    future.result()
                except Exception as err:
                    first = first or _failed(name, err)
            if first is not None:
                raise first
        finally:
            self._pending.clear()
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Every experiment that ran gets its report, however the run ended; a report's
        failure is raised only where nothing else was."""
        try:
            self.close()
        except ReportFailed:
            if kind is None:
                raise
