"""Toxiproxy's toxic types, registered under Toxiproxy's type names."""

from __future__ import annotations

from chaos.toxiproxy.toxics.bandwidth import BandwidthToxic
from chaos.toxiproxy.toxics.base import Chunk, Direction, LinkHandle, Toxic, ToxicState
from chaos.toxiproxy.toxics.latency import LatencyToxic
from chaos.toxiproxy.toxics.limit_data import LimitDataToxic
from chaos.toxiproxy.toxics.noop import NoopToxic
from chaos.toxiproxy.toxics.reset_peer import ResetPeerToxic
from chaos.toxiproxy.toxics.slicer import SlicerToxic
from chaos.toxiproxy.toxics.slow_close import SlowCloseToxic
from chaos.toxiproxy.toxics.timeout import TimeoutToxic

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
