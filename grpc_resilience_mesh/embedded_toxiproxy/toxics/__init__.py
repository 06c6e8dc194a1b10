"""Toxiproxy's toxic types, registered under Toxiproxy's type names."""

from __future__ import annotations

from grpc_resilience_mesh.embedded_toxiproxy.toxics.bandwidth import BandwidthToxic
from grpc_resilience_mesh.embedded_toxiproxy.toxics.base import (
    Chunk,
    Direction,
    LinkHandle,
    Toxic,
    ToxicState,
)
from grpc_resilience_mesh.embedded_toxiproxy.toxics.latency import LatencyToxic
from grpc_resilience_mesh.embedded_toxiproxy.toxics.limit_data import LimitDataToxic
from grpc_resilience_mesh.embedded_toxiproxy.toxics.noop import NoopToxic
from grpc_resilience_mesh.embedded_toxiproxy.toxics.reset_peer import ResetPeerToxic
from grpc_resilience_mesh.embedded_toxiproxy.toxics.slicer import SlicerToxic
from grpc_resilience_mesh.embedded_toxiproxy.toxics.slow_close import SlowCloseToxic
from grpc_resilience_mesh.embedded_toxiproxy.toxics.timeout import TimeoutToxic

TOXIC_TYPES: dict[str, type[Toxic]] = {
    cls.type_name: cls
    for cls in (
        NoopToxic,
        LatencyToxic,
        BandwidthToxic,
        SlowCloseToxic,
        TimeoutToxic,
        ResetPeerToxic,
        SlicerToxic,
        LimitDataToxic,
    )
}

__all__ = ["TOXIC_TYPES", "Chunk", "Direction", "LinkHandle", "Toxic", "ToxicState"]
