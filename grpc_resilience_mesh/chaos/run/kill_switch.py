"""The kill switch of a fault phase: the experiment's abort condition (`abort` in the experiment
file, grpc_resilience_mesh/chaos/experiment/model.py `Abort`) watched over the load's outcomes,
and the machine's chaos lever (`mesh chaos stop`, grpc_resilience_mesh/chaos/topology/lever.py)."""

from __future__ import annotations

import asyncio
import time
from collections import deque

from grpc_resilience_mesh.chaos.experiment.model import Abort
from grpc_resilience_mesh.chaos.topology.lever import LeverPulled, refuse_if_pulled, watch_lever
from grpc_resilience_mesh.loadgen.in_process import Outcome

WINDOW_S = 1.0
"""The error rate is taken over the outcomes of the last second."""


class KillSwitch:
    """Fed every outcome of the load; sets `stop` once the error rate over the last second has
    stayed above `abort.error_rate_above` for `abort.for_s`."""

    def __init__(self, abort: Abort, stop: asyncio.Event) -> None:
        self.abort = abort
        self.stop = stop
        self._window: deque[tuple[float, bool]] = deque()
        self._over_since: float | None = None
        self.lever: str | None = None
        """Why the lever was pulled, if it ended the phase."""

    @property
    def over(self) -> bool:
        """Whether the error rate is above the bound now (since the last outcome)."""
        return self._over_since is not None

    def watch(self, outcome: Outcome) -> None:
        now = time.monotonic()
        self._window.append((now, outcome.code != "OK"))
        while self._window and now - self._window[0][0] > WINDOW_S:
            self._window.popleft()
        rate = sum(bad for _, bad in self._window) / len(self._window)
        if rate > self.abort.error_rate_above:
            if self._over_since is None:
                self._over_since = now
            if now - self._over_since >= self.abort.for_s:
                self.stop.set()
        else:
            self._over_since = None

    def pull(self, reason: str) -> None:
        self.lever = reason
        self.stop.set()

    def lever_watch(self) -> asyncio.Task[None]:
        """LeverPulled now if the lever is pulled (nothing is injected), else a task that sets
        `stop` within a quarter second of a pull and, once `stop` is set for whatever cause,
        ends raising LeverPulled if the lever was it (await it after the rollback)."""
        refuse_if_pulled()
        return asyncio.create_task(self._watch_lever())

    async def _watch_lever(self) -> None:
        await watch_lever(self.pull, self.stop)
        if self.lever is not None:
            raise LeverPulled(self.lever)
