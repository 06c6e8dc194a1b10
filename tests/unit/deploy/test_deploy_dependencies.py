"""The service image installs only pyproject's [dependency-groups] services; every import in
grpc_resilience_mesh.services (its own modules aside) must be one of them, and the tooling's
libraries (in the base install, so that `pip install .` gives a `mesh` that runs) must stay out
of it."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

from tests.unit.deploy.deploy_sources import ROOT

MESH = ROOT / "grpc_resilience_mesh" / "services"
SERVICES_PACKAGE = "grpc_resilience_mesh.services"
GENERATED = MESH / "v1"
# Imports that never run in a service, each with the reason.
NOT_IN_SERVICES = {
    "grpc_tools": "tools.codegen regenerates the stubs (`make protos`): dev only",
    # grpc_resilience_mesh.services.runtime.csds, imported only by a service that dials through xDS
    # (`mesh up --xds`, a local run): the image never does, and grpcio-csds's xds-protos would
    # overwrite opentelemetry-proto's files there (grpc/grpc#42428; launch/otel_protos.py).
    "grpc_csds": "CSDS, only under `mesh up --xds` (a local run, never the image)",
    "envoy": "CSDS's protos (xds-protos), only under `mesh up --xds`",
}


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


def imported_modules(root: Path) -> Iterator[tuple[str, str]]:
    """(module, where) for every absolute import under root, generated stubs aside."""
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
                yield name, f"{path.relative_to(root)}:{node.lineno}"


@functools.cache
def _top_level_distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


@functools.cache
def _local_libraries() -> dict[str, str]:
    """Top-level package -> distribution, for the repository's own libraries (libs/*/src/*): an
    editable install records no files, so packages_distributions() does not know them."""
    found = {}
    for pyproject in (ROOT / "libs").glob("*/pyproject.toml"):
        name = tomllib.loads(pyproject.read_text())["project"]["name"]
        for package in (pyproject.parent / "src").iterdir():
            if (package / "__init__.py").is_file():
                found[package.name] = name
    return found


def distributions_of(module: str) -> set[str]:
    """The installed distributions that ship module. A namespace package's top level (google,
    opentelemetry) comes from several; keep those holding files under the module's own path."""
    local = _local_libraries().get(module.split(".")[0])
    if local is not None:
        return {_name(local)}
    candidates = _top_level_distributions().get(module.split(".")[0], [])
    if len(candidates) <= 1:
        return {_name(d) for d in candidates}
    prefix = module.replace(".", "/")
    return {
        _name(d)
        for d in candidates
        if any(
            str(f).startswith((prefix + "/", prefix + ".py"))
            for f in importlib.metadata.files(d) or []
        )
    }


def needs_a_distribution(module: str) -> bool:
    """Whether an import in the services must come from the image's group: the services' own
    modules come with the package, the rest of grpc_resilience_mesh (the tooling) does not."""
    top = module.split(".")[0]
    own = module == SERVICES_PACKAGE or module.startswith(SERVICES_PACKAGE + ".")
    return not (own or top in NOT_IN_SERVICES or top in sys.stdlib_module_names)


def test_every_import_in_services_is_in_the_image_group() -> None:
    base = {_name(r) for r in services_group()}
    unresolved = []
    for module, where in imported_modules(MESH):
        if not needs_a_distribution(module):
            continue
        if not distributions_of(module) & base:
            unresolved.append(f"{where}: {module} (from {sorted(distributions_of(module))})")
    assert not unresolved, "services import what the image does not install:\n" + "\n".join(
        unresolved
    )


def services_group() -> list[str]:
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    services: list[str] = groups["services"]
    return services


def test_the_base_install_has_the_tooling_and_the_image_group_does_not() -> None:
    """`pip install .` gives a `mesh` that runs (its libraries are in the base install); the
    image installs the services group alone, each line as the base install pins it."""
    base = _project()["dependencies"]
    assert isinstance(base, list)
    services = services_group()
    assert set(services) <= set(base), set(services) - set(base)
    tooling = {_name(r) for r in base} - {_name(r) for r in services}
    assert {"matplotlib", "aiohttp", "typer", "rich"} <= tooling
    assert "bullmq" in {_name(r) for r in services}  # payment's outbox, the notification worker


def test_the_check_sees_a_tooling_import(tmp_path: Path) -> None:
    (tmp_path / "plot.py").write_text("import matplotlib.pyplot as plt\nfrom typer import Typer\n")
    found = {module for module, _ in imported_modules(tmp_path)}
    assert found == {"matplotlib.pyplot", "typer"}
    image = {_name(r) for r in services_group()}
    assert not any(distributions_of(module) & image for module in found)


def test_only_the_services_own_modules_are_exempt() -> None:
    assert not needs_a_distribution("grpc_resilience_mesh.services.runtime.server")
    assert not needs_a_distribution("asyncio")
    # the tooling's packages and the old top-level `mesh` (PyPI's) are not the services' own
    assert needs_a_distribution("grpc_resilience_mesh.cli.entry")
    assert needs_a_distribution("grpc_resilience_mesh.services_extra")
    assert needs_a_distribution("mesh.runtime.server")


def test_a_namespace_package_resolves_to_the_distribution_of_the_module() -> None:
    assert distributions_of("opentelemetry.sdk.trace") == {"opentelemetry-sdk"}
    assert distributions_of("google.protobuf") == {"protobuf"}
    assert distributions_of("opentelemetry.instrumentation.grpc") & base_dependencies() == set()
