"""The import-linter contracts in pyproject.toml keep up with the packages they describe."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from mesh.topology import SERVICES

ROOT = Path(__file__).resolve().parents[3]
MESH = ROOT / "services" / "mesh"


def contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["name"]: c for c in config["contracts"]}


def mesh_top_level_modules() -> set[str]:
    modules = {f"mesh.{p.stem}" for p in MESH.glob("*.py") if p.stem != "__init__"}
    packages = {f"mesh.{p.parent.name}" for p in MESH.glob("*/__init__.py")}
    return modules | packages


def test_the_topology_may_import_nothing_else_of_the_project() -> None:
    (leaf,) = [c for c in contracts().values() if c.get("source_modules") == ["mesh.topology"]]
    assert set(leaf["forbidden_modules"]) == (mesh_top_level_modules() - {"mesh.topology"}) | {
        "chaos"
    }


def test_every_service_is_held_apart_from_the_others() -> None:
    services = {f"mesh.{s.name}" for s in SERVICES}
    (independence,) = [
        c
        for c in contracts().values()
        if c["type"] == "independence" and "mesh.gateway" in c["modules"]
    ]
    assert set(independence["modules"]) == services
    (layers,) = [
        c
        for c in contracts().values()
        if c["type"] == "layers" and c["layers"][-1] == "mesh.resilience"
    ]
    assert set(layers["layers"][0].split(" | ")) == services


def test_every_chaos_package_has_a_layer() -> None:
    """A new room in chaos/ must be placed in the layers, or nothing checks its arrows."""
    (layers,) = [
        c for c in contracts().values() if c["type"] == "layers" and c["layers"][0] == "chaos.cli"
    ]
    placed = {m for layer in layers["layers"] for m in layer.split(" | ")}
    root = ROOT / "chaos"
    rooms = {
        f"chaos.{p.stem}"
        for p in root.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    assert rooms == placed


def test_mesh_never_imports_chaos() -> None:
    assert any(
        c["source_modules"] == ["mesh"] and c["forbidden_modules"] == ["chaos"]
        for c in contracts().values()
        if c["type"] == "forbidden"
    )
