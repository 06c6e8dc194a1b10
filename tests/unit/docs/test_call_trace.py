"""The tracer behind the route claims (tests.support.call_trace) counts what a call runs and
nothing else: a function it runs, on its own tasks and the threads named; not a module's body
run by an import, nor the work of tasks and threads that were there before the call."""

from __future__ import annotations

import asyncio
import importlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.call_trace import CallTrace, installed

MODULES = {
    "helper.py": "def used() -> int:\n    return 1\n",
    "spawned.py": "def work() -> int:\n    return 2\n",
    "timer.py": "def tick() -> int:\n    return 3\n",
    "threaded.py": "def work() -> int:\n    return 4\n",
    "maker.py": "def make() -> int:\n    return 5\n",
    "imported.py": "from probe_pkg.maker import make\n\nTHING = make()\n",
    "stubs/generated.py": "def stub() -> int:\n    return 6\n",
}


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package of small modules standing for the product, importable as probe_pkg."""
    root = tmp_path / "probe_pkg"
    for name, text in {"__init__.py": "", "stubs/__init__.py": "", **MODULES}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    for name in [n for n in sys.modules if n.startswith("probe_pkg")]:
        del sys.modules[name]


def module(name: str) -> ModuleType:
    return importlib.import_module(f"probe_pkg.{name}")


def names(trace: CallTrace, root: Path) -> list[str]:
    return sorted(str(Path(f).relative_to(root)) for f in trace.files)


async def test_what_the_call_runs_counts_and_nothing_else_on_the_loop(probe: Path) -> None:
    helper, spawned, timer, threaded = (
        module(n) for n in ("helper", "spawned", "timer", "threaded")
    )
    trace = CallTrace(roots=[probe], left_out=probe / "stubs")
    with installed(trace):
        ticked, go = asyncio.Event(), asyncio.Event()

        async def background() -> None:  # a service's timer: there before the call
            await go.wait()
            timer.tick()
            ticked.set()

        timer_task = asyncio.create_task(background())
        await asyncio.sleep(0)

        async def a_task_of_the_call() -> None:
            spawned.work()

        async def call() -> None:
            helper.used()
            await asyncio.create_task(asyncio.to_thread(threaded.work))
            module("stubs.generated").stub()
            module("imported")  # its body calls maker.make(): import time, not the call
            await asyncio.create_task(a_task_of_the_call())
            go.set()
            await ticked.wait()

        await trace.run(call)
        await timer_task
    assert names(trace, probe) == ["helper.py", "spawned.py"]


async def test_a_named_thread_counts(probe: Path) -> None:
    threaded = module("threaded")
    trace = CallTrace(roots=[probe], left_out=probe / "stubs")
    with installed(trace):
        started, go, done = threading.Event(), threading.Event(), threading.Event()

        def writer() -> None:  # started before the call, like a span writer
            started.set()
            go.wait(10)
            threaded.work()
            done.set()

        thread = threading.Thread(target=writer, name="probe-writer")
        thread.start()
        started.wait(10)

        async def call() -> None:
            go.set()
            await asyncio.to_thread(done.wait, 10)

        await trace.run(call, threads=["probe-writer"])
        thread.join(10)
    assert names(trace, probe) == ["threaded.py"]


def test_a_whole_command_counts_every_thread(probe: Path) -> None:
    helper, threaded = module("helper"), module("threaded")
    trace = CallTrace(roots=[probe], left_out=probe / "stubs")
    with installed(trace), trace.armed_for():
        helper.used()
        thread = threading.Thread(target=threaded.work)
        thread.start()
        thread.join(10)
    assert names(trace, probe) == ["helper.py", "threaded.py"]
