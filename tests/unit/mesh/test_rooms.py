"""The product holds the product: no test doubles, no dev tools, no drills; the resilience
library names nothing of the mesh (its policy and topology live beside it; the library's own
fault layer, grpc_aio_resilience.faults, is the generic one any service mounts, issue 43);
and every package of mesh has a layer, so import-linter checks its arrows."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MESH = ROOT / "grpc_resilience_mesh" / "services"
LIBRARY = ROOT / "libs" / "grpc-aio-resilience" / "src" / "grpc_aio_resilience"


def product_modules() -> list[Path]:
    return [p for p in MESH.rglob("*.py") if "v1" not in p.relative_to(MESH).parts]


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_no_test_double_or_dev_tool_in_the_product() -> None:
    doubles = [
        f"{p.relative_to(MESH)}:{node.name}"
        for p in product_modules()
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.ClassDef) and node.name.startswith("Fake")
    ]
    assert doubles == []
    assert [
        p.name for p in product_modules() if any(m.startswith("grpc_tools") for m in imported(p))
    ] == []


def test_the_resilience_library_names_nothing_of_the_mesh() -> None:
    modules = list(LIBRARY.rglob("*.py"))
    assert modules, LIBRARY
    offenders = {
        str(p.relative_to(LIBRARY)): sorted(
            m for m in imported(p) if m.split(".")[0] == "grpc_resilience_mesh"
        )
        for p in modules
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert not (LIBRARY / "policy.py").exists()


def test_every_package_of_mesh_has_a_layer() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [
        c
        for c in config["contracts"]
        if c["type"] == "layers" and c["layers"][-1] == "grpc_resilience_mesh.services.telemetry"
    ]
    placed = {m.strip() for layer in layers["layers"] for m in layer.split(" | ")}
    package = "grpc_resilience_mesh.services"
    packages = {f"{package}.{p.parent.name}" for p in MESH.glob("*/__init__.py")}
    packages -= {f"{package}.v1"}
    assert packages, MESH
    assert packages - placed == set()
