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
