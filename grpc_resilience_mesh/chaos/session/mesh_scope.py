"""Start or attach: the mesh a session runs against, under the caller's guard from before it
starts until after it stopped. A session's own mesh is started here and always stopped here
(inside the guard's cleanup, so a first Ctrl-C does not cut the stop short); a mesh it attached
to (`--target`) is the user's and is left running."""

from __future__ import annotations

import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.chaos.session.errors import MeshDidNotStart
from grpc_resilience_mesh.chaos.session.view import Guard, GuardFor, StartView
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.launch.processes import LaunchError
from grpc_resilience_mesh.launch.xds_plane import XdsPlane

T = TypeVar("T")


@dataclass(frozen=True)
class Scope:
    """The mesh the session runs against, and how its asyncio work runs."""

    mesh: Mesh | None
    """The session's own mesh; None for a mesh attached to."""
    remote: Target | None
    guard: Guard
    start_s: float | None
    """The embedded mesh's start in seconds; None for a mesh attached to."""

    def target(self) -> Target:
        """Where the mesh answers: the one attached to, or the addresses of our own."""
        if self.remote is not None:
            return self.remote
        assert self.mesh is not None
        return Target.from_mesh(self.mesh)

    def run(self, main: Coroutine[Any, Any, T]) -> T:
        return self.guard.run(main)


@contextmanager
def mesh_scope(
    remote: Target | None,
    state_dir: Path,
    view: StartView,
    guard_for: GuardFor,
    xds: XdsPlane | None = None,
) -> Iterator[Scope]:
    """`remote`, or a mesh started in `state_dir` (under `xds` when given) and stopped on the
    way out. The launcher's errors, at the start or later, are MeshDidNotStart."""
    mesh = None if remote is not None else Mesh(state_dir=state_dir, ports=Ports.auto(), xds=xds)
    guard = guard_for(mesh, remote)
    with guard:
        try:
            start_s = None if mesh is None else _start(mesh, view)
            yield Scope(mesh, remote, guard, start_s)
        except LaunchError as err:
            raise MeshDidNotStart(err) from None
        finally:
            if mesh is not None:
                with guard.cleaning(), view.stopping_mesh():
                    mesh.stop()


def _start(mesh: Mesh, view: StartView) -> float:
    """Start the embedded mesh, telling the view how long it took; its seconds."""
    started = time.monotonic()
    with view.starting_mesh():
        mesh.start()
    took_s = time.monotonic() - started
    view.mesh_started(took_s)
    return took_s
