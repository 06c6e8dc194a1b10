"""The mesh a provider acts on (its mesh.json) and what this `chaos run` measured so far."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.client.state import STATE_DIR, STATE_PATH

T = TypeVar("T")

MEASURED: dict[str, dict[str, float]] = {}
"""Per phase (steady, fault, recovery): the metrics of its last load in this process. The
method's probes fill it; chaosgrpcmesh.probes.measured reads it in the hypothesis after."""
STARTED: set[str] = set()
"""Marks the method set (`method`: a method began), so a phase it never measured is missed."""


def state_file(
    configuration: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None
) -> Path:
    """`mesh_state` (a mesh.json, or the folder holding one), else $MESH_STATE_FILE, else
    $MESH_STATE_DIR/mesh.json, else var/mesh.json: where `mesh up` describes its mesh. The
    variables through their declarations (this distribution depends on grpc-resilience-mesh)."""
    given = (configuration or {}).get("mesh_state") or STATE_PATH.read(environ)
    path = Path(str(given or STATE_DIR.read(environ)))
    return path / "mesh.json" if path.is_dir() or not path.suffix else path


def target(configuration: Mapping[str, Any] | None) -> Target:
    """The mesh that state_file describes: its gateway, admin and metrics addresses, token."""
    return Target.from_state_file(state_file(configuration))


def experiment(configuration: Mapping[str, Any] | None) -> Experiment | None:
    """The catalogue experiment `mesh_experiment` names (a name or a YAML path), if any: the
    load probe counts its dependency's calls as `mesh chaos run` does."""
    name = (configuration or {}).get("mesh_experiment")
    return load_experiment(str(name))[1] if name else None


def run(coro: Coroutine[Any, Any, T]) -> T:
    """A provider's asyncio work, in a loop of its own (Chaos Toolkit calls providers plainly)."""
    return asyncio.run(coro)
