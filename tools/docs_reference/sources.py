"""Where the reference pages' facts live in the code: the only imports that change when a
module moves (the generators below read these objects, never the paths)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import grpc_aio_resilience
from grpc_aio_resilience import option_rows
from grpc_resilience_mesh import services as mesh
from grpc_resilience_mesh.chaos.experiment.loading import catalogue
from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.runtime import server_chain
from grpc_resilience_mesh.services.telemetry import names
from grpc_resilience_mesh.services.telemetry.job_metrics import JobMetrics
from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics

ROOT = Path(__file__).resolve().parents[2]
DOCS_ROOT = ROOT / "docs"
DOCS = DOCS_ROOT / "reference"

PIPELINE_ORDER: tuple[str, ...] = grpc_aio_resilience.PIPELINE_ORDER
SERVER_ORDER: tuple[str, ...] = server_chain.SERVER_ORDER

NOT_SCANNED = frozenset({"tests", "tools", "v1"})  # v1: generated stubs


def package_roots() -> tuple[Path, ...]:
    """Every package of the project (grpc_resilience_mesh's), found on disk so that a package
    moved or added is scanned too: for the variables read without a declaration."""
    return tuple(
        d
        for d in sorted((ROOT / "grpc_resilience_mesh").iterdir())
        if (d / "__init__.py").is_file() and d.name not in NOT_SCANNED
    )


def integration_roots() -> tuple[Path, ...]:
    """The integrations' packages (integrations/<distribution>/<package>): distributions of their
    own, not on the path, so read for the variables they read but never imported."""
    return tuple(
        d for d in sorted((ROOT / "integrations").glob("*/*")) if (d / "__init__.py").is_file()
    )


def scanned_roots() -> tuple[Path, ...]:
    """Every package whose reads of the environment are checked: the project's and the
    integrations'."""
    return package_roots() + integration_roots()


def services_root() -> Path:
    """The package the services run: where span events are added."""
    return Path(mesh.__file__).parent


def option_class(name: str) -> type:
    """An options class of the library's face by name (`RetryPolicy`): a frozen dataclass whose
    fields `option_rows` reads."""
    found = (
        getattr(grpc_aio_resilience, name, None) if name in grpc_aio_resilience.__all__ else None
    )
    if not (isinstance(found, type) and dataclasses.is_dataclass(found)):
        raise ValueError(f"{name!r} is no options class of grpc_aio_resilience's face")
    return found


def package_name(root: Path) -> str:
    """The dotted name the package at `root` is imported as."""
    return ".".join(root.relative_to(_import_base(root)).parts)


def _import_base(root: Path) -> Path:
    namespace = ROOT / "grpc_resilience_mesh"
    return ROOT if root.is_relative_to(namespace) else root.parent


def modules(root: Path) -> Iterator[tuple[str, Path]]:
    """(dotted module name, file) of every module under the package `root`."""
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(_import_base(root)).with_suffix("").parts
        if NOT_SCANNED.isdisjoint(parts[1:]):
            yield ".".join(p for p in parts if p != "__init__"), path


__all__ = [
    "DOCS",
    "DOCS_ROOT",
    "PIPELINE_ORDER",
    "ROOT",
    "SERVER_ORDER",
    "JobMetrics",
    "MeshMetrics",
    "catalogue",
    "integration_roots",
    "modules",
    "names",
    "option_class",
    "option_rows",
    "package_name",
    "package_roots",
    "scanned_roots",
    "services_root",
    "settings",
]
