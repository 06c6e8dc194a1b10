"""Toxiproxy 2.12's toxic types and the attributes each takes, as data.

What a client checks a toxic against before sending it (a chaos experiment, `mesh fault add`),
without loading the toxics' stream code: toxics/ implements them, and a unit test holds each
class's `type_name` and `attribute_names` to this table.
"""

TOXIC_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "noop": (),
    "latency": ("latency", "jitter"),
    "bandwidth": ("rate",),
    "slow_close": ("delay",),
    "timeout": ("timeout",),
    "reset_peer": ("timeout",),
    "slicer": ("average_size", "size_variation", "delay"),
    "limit_data": ("bytes",),
}
"""Type name -> attribute names, in the order of
grpc_resilience_mesh.embedded_toxiproxy.toxics.TOXIC_TYPES."""
