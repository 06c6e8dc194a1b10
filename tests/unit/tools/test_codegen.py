"""The committed stubs are what protos/ generates: a changed proto cannot silently diverge."""

from grpc_resilience_mesh.services.v1 import (
    gateway_pb2,
    payment_pb2,
    profile_pb2,
    recommendation_pb2,
)
from tools.codegen import stale_files


def test_committed_stubs_match_protos() -> None:
    assert stale_files() == []


def test_every_method_declares_idempotency_level() -> None:
    from google.protobuf.descriptor_pb2 import MethodOptions

    for module in (gateway_pb2, payment_pb2, profile_pb2, recommendation_pb2):
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                level = method.GetOptions().idempotency_level
                assert level != MethodOptions.IDEMPOTENCY_UNKNOWN, method.full_name
    reads = ["GetProfile", "Recommend", "Popular", "GetCharge", "GetHome"]
    for module in (gateway_pb2, payment_pb2, profile_pb2, recommendation_pb2):
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                if method.name in reads:
                    assert method.GetOptions().idempotency_level == MethodOptions.NO_SIDE_EFFECTS


def test_the_committed_stubs_import_at_the_declared_floors() -> None:
    """Generated code refuses a runtime older than what wrote it: a user at the bottom of the
    ranges in pyproject.toml must be able to import every stub (CI once resolved grpcio-tools
    1.85.4 while the stubs said 1.85.1, and the gencode asked for protobuf 7.35.1 while the
    range allowed 6.31)."""
    import re
    from pathlib import Path

    from tools.codegen import ROOT, grpcio_floor

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    floors = set(re.findall(r'"protobuf>=(\d+)\.(\d+)\.?(\d*),<(\d+)"', pyproject))
    assert len(floors) == 1, floors
    major, minor, patch, below = floors.pop()
    protobuf_floor = (int(major), int(minor), int(patch or 0))
    folders = ["grpc_resilience_mesh/services/v1", "examples/chain", "examples/kv"]
    stubs = [p for folder in folders for p in sorted(Path(ROOT / folder).glob("*_pb2*.py"))]
    assert len(stubs) == 14, [p.name for p in stubs]
    for path in stubs:
        text = path.read_text(encoding="utf-8")
        if path.name.endswith("_pb2_grpc.py"):
            assert f"GRPC_GENERATED_VERSION = '{grpcio_floor()}'" in text, path
            continue
        gencode = re.search(r"Domain\.PUBLIC,\s*(\d+),\s*(\d+),\s*(\d+),", text)
        assert gencode is not None, path
        version = tuple(int(n) for n in gencode.groups())
        assert version[0] == protobuf_floor[0] < int(below), (path, version, protobuf_floor)
        assert version <= protobuf_floor, (path, version, protobuf_floor)
