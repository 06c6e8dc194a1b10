"""Which product files one call crosses, traced by a profile hook (sys.setprofile) on every thread.

A file is crossed when one of its functions runs during the call outside any import: a module the
call imports is not crossed by running its body. Product: `grpc_resilience_mesh/**` and the
resilience library (a distribution of its own, but on every call's route), generated stubs left
out.

A whole command (tests.support.traced_cli) is its own call, on every thread. A call made on a
running event loop shares the process with work that is not its own (a service's timers and the
threads they use): there only the loop's thread counts, outside the tasks already running when
the call started, with the threads the caller names. The hook goes in (`installed`) before what
the call goes through starts, so the threads that starts carry it too; it records only while
armed (`CallTrace.armed_for`, `CallTrace.run`).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ROOT / "grpc_resilience_mesh"
LIBRARY = ROOT / "libs" / "grpc-aio-resilience" / "src"
GENERATED = PRODUCT / "services" / "v1"


class CallTrace:
    """The files crossed while armed, in the order each was first crossed."""

    def __init__(
        self, roots: Sequence[Path] = (PRODUCT, LIBRARY), left_out: Path = GENERATED
    ) -> None:
        self.armed = False
        self._seen: dict[str, None] = {}
        self._importing: dict[int, int] = {}
        self._loop_thread: int | None = None
        self._earlier: set[asyncio.Task[Any]] = set()
        self._threads: Collection[str] = ()
        self._product = tuple(f"{root}{os.sep}" for root in roots)
        self._generated = f"{left_out}{os.sep}"

    def hook(self, frame: FrameType, event: str, _arg: Any) -> None:
        """sys.setprofile's hook: module bodies mark an import; any other frame is a call."""
        if event not in ("call", "return"):
            return
        code = frame.f_code
        if code.co_name == "<module>":
            thread = threading.get_ident()
            depth = self._importing.get(thread, 0) + (1 if event == "call" else -1)
            self._importing[thread] = max(depth, 0)
            return
        if event != "call" or not self.armed or self._importing.get(threading.get_ident()):
            return
        name = code.co_filename
        if name in self._seen or not name.startswith(self._product):
            return
        if name.startswith(self._generated) or self._off_path():
            return
        self._seen[name] = None

    def _off_path(self) -> bool:
        if self._loop_thread is None:
            return False
        if self._loop_thread != threading.get_ident():
            return threading.current_thread().name not in self._threads
        return asyncio.current_task() in self._earlier

    @property
    def files(self) -> list[str]:
        """Paths relative to the checkout (absolute outside it)."""
        paths = [Path(f) for f in self._seen]
        return [str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p) for p in paths]

    @contextmanager
    def armed_for(self, threads: Collection[str] = ()) -> Iterator[CallTrace]:
        """Records what the block runs, forgetting what any earlier block ran. On an event
        loop: its thread, outside the tasks already running but this one, and the threads
        named in `threads`."""
        self._seen.clear()
        self._threads = threads
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._loop_thread, self._earlier = None, set()
        else:
            self._loop_thread = threading.get_ident()
            self._earlier = asyncio.all_tasks() - {asyncio.current_task()}
        self.armed = True
        try:
            yield self
        finally:
            self.armed = False
            self._earlier = set()

    async def run(
        self, call: Callable[[], Awaitable[Any]], threads: Collection[str] = ()
    ) -> list[str]:
        """The files `call` crosses (this trace's hook must be installed): on this loop's
        thread and on the threads named in `threads`."""
        with self.armed_for(threads):
            await call()
        return self.files


@contextmanager
def installed(trace: CallTrace) -> Iterator[CallTrace]:
    """`trace`'s hook on this thread and on every thread started inside the block."""
    sys.setprofile(trace.hook)
    threading.setprofile(trace.hook)
    try:
        yield trace
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
