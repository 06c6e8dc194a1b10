"""The runner's side of the load generator: starts the generator process (the Go one when built,
else grpc_resilience_mesh/loadgen/generator.py), sends it plans and turns its records into outcomes.

Its names are the load package's face (`from grpc_resilience_mesh.loadgen.in_process import
LoadGenerator, plan_for, ...`): the outcome types, the plan builder and the percentile live in their
own modules (grpc_resilience_mesh/loadgen/outcomes.py, plans.py, percentile.py) and are re-exported
here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

from grpc_resilience_mesh.loadgen.outcomes import LoadResult, Outcome, outcome_of
from grpc_resilience_mesh.loadgen.percentile import percentile
from grpc_resilience_mesh.loadgen.plans import metadata_for, plan_for, traced
from grpc_resilience_mesh.loadgen.protocol import Plan, decode
from grpc_resilience_mesh.services import settings

LOADGEN = settings.Var(
    "MESH_LOADGEN",
    settings.lower_choice("python", "go"),
    "",
    "the load generator: go (when built) or python",
)

__all__ = [
    "GO_GENERATOR",
    "LoadGenerator",
    "LoadGeneratorError",
    "LoadResult",
    "Outcome",
    "generator_command",
    "metadata_for",
    "outcome_of",
    "percentile",
    "plan_for",
    "traced",
]

GO_GENERATOR = Path(__file__).resolve().parents[2] / ".peers" / "bin" / "mesh-loadgen"
"""The Go generator (grpc_resilience_mesh/loadgen/go, built by `make peers`): the same protocol at a
fraction of the Python one's CPU per call."""


class LoadGeneratorError(ValueError):
    """MESH_LOADGEN names no generator, or one that is not built."""


def generator_command(environ: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """("go" or "python", its command): `MESH_LOADGEN=python|go` forces one; by default the
    Go generator when it is built, else the Python one."""
    wanted = LOADGEN.read(environ)
    built = os.access(GO_GENERATOR, os.X_OK)
    if wanted == "python" or (wanted == "" and not built):
        return "python", [sys.executable, "-m", "grpc_resilience_mesh.loadgen.generator"]
    if not built:
        raise LoadGeneratorError(f"MESH_LOADGEN=go: no {GO_GENERATOR}; run `make peers`")
    return "go", [str(GO_GENERATOR)]


class LoadGenerator:
    """The load generator process (grpc_resilience_mesh/loadgen/go's Go one when built, else
    grpc_resilience_mesh/loadgen/ generator.py; generator_command), started once and reused for
    every load of a run: its CPU is its own and measured, and no load pays its start-up."""

    def __init__(self) -> None:
        self._proc: asyncio.subprocess.Process | None = None
        self.kind: str | None = None
        """Which generator ran ("go" or "python"); None before the first load."""

    async def _started(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            self.kind, command = generator_command()
            self._proc = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=2**26,
            )
        return self._proc

    async def run(
        self,
        plan: Plan,
        on_outcome: Callable[[Outcome], None] | None = None,
        stop: asyncio.Event | None = None,
    ) -> LoadResult:
        """Send `plan`; outcomes stream back as they finish; `stop` ends the load early."""
        kept: list[Outcome] = []

        def keep(outcome: Outcome) -> None:
            kept.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)

        result = await self.stream(plan, keep, stop)
        result.outcomes = kept
        return result

    async def stream(
        self, plan: Plan, on_outcome: Callable[[Outcome], None], stop: asyncio.Event | None = None
    ) -> LoadResult:
        """As `run`, but each outcome only goes to `on_outcome` (the result holds none), so
        a load's memory does not grow with its length: aggregate as they come."""
        proc = await self._started()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(plan.dumps().encode() + b"\n")
        await proc.stdin.drain()
        watcher = asyncio.create_task(self._stop_on(stop, proc)) if stop is not None else None
        result: LoadResult | None = None
        try:
            result = await self._records(plan, proc.stdout, on_outcome)
        finally:
            if watcher is not None:
                watcher.cancel()
            if result is None:
                await self.close()
        if result is None:
            raise RuntimeError("the load generator exited before the end of its load")
        return result

    @staticmethod
    async def _stop_on(stop: asyncio.Event, proc: asyncio.subprocess.Process) -> None:
        await stop.wait()
        assert proc.stdin is not None
        with contextlib.suppress(ConnectionError):
            proc.stdin.write(b"stop\n")
            await proc.stdin.drain()

    @staticmethod
    async def _records(
        plan: Plan, stdout: asyncio.StreamReader, on_outcome: Callable[[Outcome], None]
    ) -> LoadResult | None:
        """Outcomes to `on_outcome` until the end line (its summary), or None at EOF."""
        async for line in stdout:
            kind, body = decode(line.decode())
            if kind == "E":
                return LoadResult(elapsed_s=float(body["elapsed_s"]), generator_cpu_s=body["cpu_s"])
            for record in body:
                on_outcome(outcome_of(plan, record))
        return None

    async def close(self) -> None:
        """End the process (closing its stdin ends it; killed if it does not)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(ConnectionError):
                proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), timeout=5)
        except TimeoutError:
            proc.kill()
            await proc.wait()
