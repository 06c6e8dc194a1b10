"""A load's messages from .proto files: compiled by grpcio-tools' protoc into a descriptor set,
then read as one (descriptors.read_descriptor_set), for servers that serve no reflection.

protoc runs as a child process (`python -m grpc_tools.protoc`) rather than in this one: its
errors go to its own stderr, which is how a user learns which line of which file is wrong.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from google.protobuf import descriptor_pb2

from grpc_resilience_mesh.loadgen.any_method.descriptors import read_descriptor_set
from grpc_resilience_mesh.loadgen.any_method.method import LoadInputError

PROTOC_TIMEOUT_S = 60.0
"""How long protoc may take over the files; far longer than any real set of files needs."""

NO_PROTOC = (
    "protos: compiling .proto files needs grpcio-tools, which is not installed here: "
    "`pip install grpcio-tools`, or give descriptor_set: a FileDescriptorSet built with "
    "`protoc --include_imports --descriptor_set_out=FILE FILE.proto`"
)


def protoc_available() -> bool:
    """grpcio-tools is importable by this interpreter (the [dev] extra installs it)."""
    try:
        return importlib.util.find_spec("grpc_tools.protoc") is not None
    except (ImportError, ValueError):  # a parent package that is not a package, or unset
        return False


def well_known_include() -> Path | None:
    """grpcio-tools' copy of google/protobuf/*.proto, so files importing them compile."""
    spec = importlib.util.find_spec("grpc_tools")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = Path(next(iter(spec.submodule_search_locations))) / "_proto"
    return found if found.is_dir() else None


def protoc_argv(protos: Sequence[Path], proto_path: Sequence[Path], out: Path) -> list[str]:
    """protoc's command line: each `proto_path` (default: each file's folder) as an include
    path, then the well-known types', every import bundled into `out`."""
    includes = list(proto_path) or list(dict.fromkeys(p.parent for p in protos))
    if (bundled := well_known_include()) is not None:
        includes.append(bundled)
    return [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        *(f"--proto_path={path}" for path in includes),
        "--include_imports",
        f"--descriptor_set_out={out}",
        *(str(p) for p in protos),
    ]


def compile_protos(
    protos: Sequence[Path], proto_path: Sequence[Path] = ()
) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """The files of `protos` and every file they import, as protoc parses them; LoadInputError
    with protoc's own message (file:line: what) when they do not compile, or no protoc."""
    if not protos:
        raise LoadInputError("protos: no .proto file given")
    if not protoc_available():
        raise LoadInputError(NO_PROTOC)
    for path in (*protos, *proto_path):
        if not path.exists():
            raise LoadInputError(f"protos: {path} does not exist")
    with tempfile.TemporaryDirectory(prefix="mesh-protos-") as tmp:
        out = Path(tmp) / "descriptors.binpb"
        try:
            done = subprocess.run(
                protoc_argv(protos, proto_path, out),
                capture_output=True,
                text=True,
                timeout=PROTOC_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise LoadInputError(f"protos: protoc took over {PROTOC_TIMEOUT_S:g} s") from None
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip() or f"exit code {done.returncode}"
            raise LoadInputError(f"protos: protoc refused them: {said}")
        return read_descriptor_set(out)
