"""A service of a user's own, not the mesh's: `trapdemo.v1.Ledger`, registered in the default
protobuf descriptor pool as its `_pb2` module would register it, with one method per kind of
idempotency (none declared, NO_SIDE_EFFECTS, IDEMPOTENT, an idempotency key, a stream)."""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool

SERVICE = "trapdemo.v1.Ledger"
POST = f"/{SERVICE}/Post"
GET = f"/{SERVICE}/Get"
PUT = f"/{SERVICE}/Put"
TRANSFER = f"/{SERVICE}/Transfer"
WATCH = f"/{SERVICE}/Watch"

_FILE = "trapdemo/v1/ledger.proto"
_Options = descriptor_pb2.MethodOptions


def register() -> str:
    """Adds the service to the default pool once per process; returns its full name."""
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(_FILE)
    except KeyError:
        pool.Add(_file())
    return SERVICE


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(name=_FILE, package="trapdemo.v1", syntax="proto3")
    plain = proto.message_type.add(name="Entry")
    plain.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING)
    keyed = proto.message_type.add(name="TransferRequest")
    keyed.field.add(
        name="idempotency_key", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING
    )
    service = proto.service.add(name="Ledger")
    for name, level, request, streams in (
        ("Post", _Options.IDEMPOTENCY_UNKNOWN, "Entry", False),
        ("Get", _Options.NO_SIDE_EFFECTS, "Entry", False),
        ("Put", _Options.IDEMPOTENT, "Entry", False),
        ("Transfer", _Options.IDEMPOTENCY_UNKNOWN, "TransferRequest", False),
        ("Watch", _Options.NO_SIDE_EFFECTS, "Entry", True),
    ):
        method = service.method.add(
            name=name,
            input_type=f".trapdemo.v1.{request}",
            output_type=".trapdemo.v1.Entry",
            server_streaming=streams,
        )
        method.options.idempotency_level = level
    return proto
