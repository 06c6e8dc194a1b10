"""The import-linter contracts in pyproject.toml keep up with the packages they describe."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import grimp

from grpc_resilience_mesh.services.topology import SERVICES

ROOT = Path(__file__).resolve().parents[3]
MESH = ROOT / "grpc_resilience_mesh" / "services"
NS = "grpc_resilience_mesh"
TOOLING = tuple(
    f"{NS}.{name}"
    for name in (
        "chaos",
        "cli",
        "console",
        "launch",
        "client",
        "embedded_toxiproxy",
        "loadgen",
        "bench",
    )
)


def contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["name"]: c for c in config["contracts"]}


def mesh_top_level_modules() -> set[str]:
    modules = {f"{NS}.services.{p.stem}" for p in MESH.glob("*.py") if p.stem != "__init__"}
    packages = {f"{NS}.services.{p.parent.name}" for p in MESH.glob("*/__init__.py")}
    return modules | packages


def test_the_topology_may_import_nothing_else_of_the_project() -> None:
    (leaf,) = [
        c
        for c in contracts().values()
        if c.get("source_modules") == ["grpc_resilience_mesh.services.topology"]
    ]
    assert set(leaf["forbidden_modules"]) == (
        mesh_top_level_modules() - {"grpc_resilience_mesh.services.topology"}
    ) | set(TOOLING)


def test_every_service_is_held_apart_from_the_others() -> None:
    services = {f"{NS}.services.{s.name}" for s in SERVICES}
    (independence,) = [
        c
        for c in contracts().values()
        if c["type"] == "independence" and "grpc_resilience_mesh.services.gateway" in c["modules"]
    ]
    assert set(independence["modules"]) == services
    (layers,) = [
        c
        for c in contracts().values()
        if c["type"] == "layers" and c["layers"][-1] == "grpc_resilience_mesh.services.telemetry"
    ]
    assert set(layers["layers"][0].split(" | ")) == services


def test_every_tooling_room_has_a_layer() -> None:
    """A new room in a tooling package must be placed in the layers, or nothing checks its
    arrows (every module or package at a tooling package's top, or the package itself); and
    every name in the layers is a module that exists."""
    (layers,) = [
        c
        for c in contracts().values()
        if c["type"] == "layers"
        and c["layers"][0] == "grpc_resilience_mesh.cli"
        and c["name"] != package_layers()["name"]
    ]
    placed = {m.strip() for layer in layers["layers"] for m in layer.split(" | ")}

    def covered(room: str) -> bool:
        return any(
            p == room or p.startswith(room + ".") or room.startswith(p + ".") for p in placed
        )

    def exists(name: str) -> bool:
        path = ROOT.joinpath(*name.split("."))
        return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()

    rooms = {
        f"{package}.{p.stem}"
        for package in TOOLING
        for p in ROOT.joinpath(*package.split(".")).iterdir()
        if (p.suffix == ".py" and p.stem not in ("__init__", "__main__"))
        or (p / "__init__.py").is_file()
    }
    assert {r for r in rooms if not covered(r)} == set()
    assert {p for p in placed if not exists(p)} == set()


def package_layers() -> dict[str, Any]:
    """The contract whose layers are the namespace's packages (grpc_resilience_mesh.X)."""
    (layers,) = [
        c
        for c in contracts().values()
        if c["type"] == "layers"
        and all(name.strip().count(".") == 1 for layer in c["layers"] for name in layer.split("|"))
    ]
    return layers


def test_every_package_of_the_namespace_has_a_layer_and_siblings_are_independent() -> None:
    """No two of the tooling's packages import each other: each package of the namespace sits
    in one layer of one contract, the services at the bottom, the CLI on top; packages sharing
    a layer are independent (`|`), never `:`."""
    layers = package_layers()["layers"]
    placed = [name.strip() for layer in layers for name in layer.split("|")]
    packages = {f"{NS}.{p.parent.name}" for p in ROOT.joinpath(NS).glob("*/__init__.py")}
    assert sorted(placed) == sorted(packages)
    assert layers[0] == f"{NS}.cli" and layers[-1] == f"{NS}.services"
    assert not any(":" in layer for layer in layers)


def test_mesh_never_imports_the_tooling() -> None:
    assert any(
        c["source_modules"] == [f"{NS}.services"] and set(c["forbidden_modules"]) == set(TOOLING)
        for c in contracts().values()
        if c["type"] == "forbidden"
    )


def test_the_embedded_toxiproxy_imports_nothing_else_of_the_project() -> None:
    assert any(
        c["source_modules"] == [f"{NS}.embedded_toxiproxy"]
        and set(c["forbidden_modules"])
        == {f"{NS}.services"} | set(TOOLING) - {f"{NS}.embedded_toxiproxy"}
        for c in contracts().values()
        if c["type"] == "forbidden"
    )


def test_the_chaos_commands_only_parse_and_print() -> None:
    """`mesh chaos run`, `mesh demo` and `mesh soak` reach the launcher, the runner, the report
    writer and the trace index only through the session's API (grpc_resilience_mesh/chaos/session/
    session.py and soak.py): none of their modules imports one of those itself."""
    graph = grimp.build_graph(NS, exclude_type_checking_imports=True)
    api = {f"{NS}.chaos.session.{name}" for name in ("session", "soak", "errors")}
    machinery = (f"{NS}.launch.", f"{NS}.client.", f"{NS}.chaos.run.runner", f"{NS}.chaos.session.")
    allowed = api | {f"{NS}.launch.private"}  # --json's file, shareable as the reports are
    commands = ("chaos_cmd", "chaos_run", "chaos_progress", "demo", "soak")
    reached = {
        (command, imported)
        for command in commands
        for imported in graph.find_modules_directly_imported_by(f"{NS}.cli.{command}")
        if imported.startswith(machinery) and imported not in allowed
    }
    assert reached == set()
