"""The service image installs only [project.dependencies]; every import in services/mesh must be
one of them, and the tooling's libraries (the `tools` extra) must stay out of it."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

from tests.unit.deploy.deploy_sources import ROOT

MESH = ROOT / "services" / "mesh"
GENERATED = MESH / "v1"
# Imports that never run in a service, each with the reason.
NOT_IN_SERVICES = {"grpc_tools": "mesh.codegen regenerates the stubs (`make protos`): dev only"}


def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string (PEP 503)."""
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match[0]).lower()


def base_dependencies() -> set[str]:
    requirements = _project()["dependencies"]
    assert isinstance(requirements, list)
    return {_name(r) for r in requirements}


def imported_top_levels(root: Path) -> Iterator[tuple[str, str]]:
    """(top-level module, where) for every absolute import under root, generated stubs aside."""
    for path in sorted(root.rglob("*.py")):
        if GENERATED in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                yield name.split(".")[0], f"{path.relative_to(root)}:{node.lineno}"


def distributions_of(top_level: str) -> set[str]:
    return {_name(d) for d in importlib.metadata.packages_distributions().get(top_level, [])}


def test_every_import_in_services_is_a_base_dependency() -> None:
    base = base_dependencies()
    unresolved = []
    for top, where in imported_top_levels(MESH):
        if top in NOT_IN_SERVICES or top == "mesh" or top in sys.stdlib_module_names:
            continue
        if not distributions_of(top) & base:
            unresolved.append(f"{where}: {top} (from {sorted(distributions_of(top))})")
    assert not unresolved, "services import what the image does not install:\n" + "\n".join(
        unresolved
    )


def test_the_tooling_is_an_extra_the_image_does_not_install() -> None:
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    tools = {_name(r) for r in extras["tools"]}
    assert {"matplotlib", "aiohttp", "typer", "rich"} <= tools
    assert not tools & base_dependencies()
    assert "bullmq" in base_dependencies()  # payment's outbox and the notification worker


def test_the_check_sees_a_tooling_import(tmp_path: Path) -> None:
    (tmp_path / "plot.py").write_text("import matplotlib.pyplot as plt\nfrom typer import Typer\n")
    found = {top for top, _ in imported_top_levels(tmp_path)}
    assert found == {"matplotlib", "typer"}
    assert not any(distributions_of(top) & base_dependencies() for top in found)
