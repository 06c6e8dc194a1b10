"""`mesh soak`'s session: the embedded mesh started in a state dir of its own, soaked
(grpc_resilience_mesh/chaos/soak.py), and stopped, under the caller's guard as a chaos run's."""

from __future__ import annotations

import tempfile
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Protocol

from grpc_resilience_mesh.chaos.session.mesh_scope import mesh_scope
from grpc_resilience_mesh.chaos.session.view import GuardFor, Quiet, StartView, plain_guard
from grpc_resilience_mesh.chaos.soak import SoakConfig, SoakResult, Tick, run_soak


class SoakView(StartView, Protocol):
    """Told while the mesh starts and while it soaks."""

    def soaking(self, config: SoakConfig) -> AbstractContextManager[Tick | None]:
        """Entered around the soak; the tick it gives is told the time, the codes, the fault."""


class QuietSoak(Quiet):
    """A soak view that says nothing."""

    def soaking(self, config: SoakConfig) -> AbstractContextManager[Tick | None]:
        return nullcontext()


def soak_session(
    config: SoakConfig,
    state_dir: Path | None = None,
    view: SoakView | None = None,
    guard_for: GuardFor = plain_guard,
) -> SoakResult:
    """Start the mesh (in `state_dir`, default a fresh temporary dir), soak it, stop it;
    MeshDidNotStart when the launcher fails."""
    shown = view or QuietSoak()
    directory = state_dir or Path(tempfile.mkdtemp(prefix="mesh-soak-"))
    with mesh_scope(None, directory, shown, guard_for) as scope:
        assert scope.mesh is not None
        with shown.soaking(config) as tick:
            return scope.run(run_soak(scope.mesh, config, tick))
