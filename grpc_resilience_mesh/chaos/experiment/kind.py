"""Which kind of file a path is, read from its top-level keys alone: a topology experiment (a
`topology:` key), a topology file (`kind: topology`), or neither (a catalogue experiment). The
CLI asks this of every file it is given, so it imports no model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grpc_resilience_mesh.services import safe_yaml


def peek(path: Path) -> dict[str, Any] | None:
    """The file's top-level mapping, or None when it cannot be read as one."""
    try:
        raw = safe_yaml.load_file(str(path))
    except (safe_yaml.YamlError, OSError):
        return None
    return raw if isinstance(raw, dict) else None


def is_topology_experiment(path: Path) -> bool:
    """A YAML file with a top-level `topology:` key (a topology experiment)."""
    raw = peek(path)
    return raw is not None and "topology" in raw


def is_topology_file(path: Path) -> bool:
    """A YAML file that says `kind: topology`."""
    raw = peek(path)
    return raw is not None and raw.get("kind") == "topology"


def is_topology_kind(name: str) -> bool:
    """A path to a topology file or a topology experiment (catalogue names are neither)."""
    path = Path(name)
    return path.is_file() and (is_topology_experiment(path) or is_topology_file(path))
