"""noop: passes data through unchanged (Toxiproxy registers it as a usable type)."""

from __future__ import annotations

from grpc_resilience_mesh.embedded_toxiproxy.toxics.base import Toxic


class NoopToxic(Toxic):
    """Does nothing; useful to test the API without changing traffic."""

    type_name = "noop"
