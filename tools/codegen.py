"""Generate grpc_resilience_mesh/services/v1 from protos/mesh/v1 (`make protos`), or check it
is current.

protoc names the Python modules after the proto files' paths (`mesh.v1.gateway_pb2`); the
stubs live in the project's namespace, so their imports of one another are rewritten to it
(the proto package, and so every name on the wire, stays `mesh.v1`).

`python -m tools.codegen --check` exits 1 naming every stale or missing file; the test suite
runs the same comparison so a changed proto cannot silently diverge from the stubs.

The `_pb2_grpc.py` modules refuse to import under a grpcio older than the grpcio-tools that wrote
them (`GRPC_GENERATED_VERSION`). That stamp is set to the floor of the project's grpcio range
(`stamp_floor`), so a user at the floor can import the stubs and a grpcio-tools patch release
(1.85.1 to 1.85.4 changed nothing else) leaves them current.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROTOS = ROOT / "protos"
GENERATED = ROOT / "grpc_resilience_mesh" / "services" / "v1"
PACKAGE = "grpc_resilience_mesh.services.v1"
_MODULE_REF = re.compile(r"(?<![\w./])mesh\.v1(?= import |\.\w+_pb2)")
_STAMP = re.compile(r"^GRPC_GENERATED_VERSION = '[^']*'$", re.MULTILINE)
_GRPCIO_RANGE = re.compile(r'^\s*"grpcio~=(\d+\.\d+\.\d+)",$', re.MULTILINE)


def grpcio_floor() -> str:
    """The lowest grpcio the project declares (`grpcio~=X.Y.Z` in pyproject.toml)."""
    found: set[str] = set(
        _GRPCIO_RANGE.findall((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    )
    if len(found) != 1:
        raise SystemExit(f"pyproject.toml: expected one grpcio~= floor, found {sorted(found)}")
    return found.pop()


def stamp_floor(text: str) -> str:
    """A generated module with its grpcio stamp set to the declared floor."""
    return _STAMP.sub(f"GRPC_GENERATED_VERSION = '{grpcio_floor()}'", text)


def generate(out_dir: Path) -> None:
    """The stubs, written into out_dir, their imports in the project's namespace."""
    with tempfile.TemporaryDirectory() as tmp:
        _protoc(Path(tmp))
        out_dir.mkdir(parents=True, exist_ok=True)
        for made in sorted((Path(tmp) / "mesh" / "v1").iterdir()):
            text = stamp_floor(_MODULE_REF.sub(PACKAGE, made.read_text()))
            (out_dir / made.name).write_text(text)


def _protoc(out_dir: Path) -> None:
    from grpc_tools import protoc  # dev dependency: only `make protos` and the tests need it

    sources = sorted(str(p.relative_to(PROTOS)) for p in (PROTOS / "mesh" / "v1").glob("*.proto"))
    args = [
        "protoc",
        f"-I{PROTOS}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--pyi_out={out_dir}",
        *sources,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")


def stale_files() -> list[str]:
    """Generated files whose committed copy differs from a fresh generation."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh_dir = Path(tmp)
        generate(fresh_dir)
        problems = []
        for fresh in sorted(fresh_dir.iterdir()):
            committed = GENERATED / fresh.name
            if not committed.exists():
                problems.append(f"{committed.relative_to(ROOT)} is missing")
            elif committed.read_bytes() != fresh.read_bytes():
                problems.append(f"{committed.relative_to(ROOT)} is stale")
        return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--write", action="store_true", help="regenerate in place")
    args = parser.parse_args(argv)
    if args.write:
        generate(GENERATED)
        print(f"regenerated {GENERATED.relative_to(ROOT)}")
        return 0
    problems = stale_files()
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("run `make protos`", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
