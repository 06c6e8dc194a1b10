"""The mesh's policy: per-edge and per-service settings over their defaults, checked against
the topology (every edge and service it names exists; edges sharing a bulkhead pool agree).

The settings of each strategy are the resilience library's options dataclasses (EdgePolicy,
ServerPolicy), which pydantic validates in place (an OptionError from their own checks names
the path below the section); this model is what the mesh adds: names from topology.py, and
each server's declared pool (grpc_resilience_mesh.services.policy.pool).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from grpc_aio_resilience import BulkheadPolicy, EdgePolicy
from grpc_resilience_mesh.services import safe_yaml, topology
from grpc_resilience_mesh.services.policy.criticality import CriticalityPolicy
from grpc_resilience_mesh.services.policy.pool import MeshServerPolicy


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class FallbackPolicy(_Model):
    """How the gateway degrades recommendations."""

    popular_ttl_s: float = Field(
        default=30.0,
        ge=0,
        le=3600,
        description="[0, 3600]: serve the cached popular list without a call while this fresh",
    )


class MeshPolicy(_Model):
    """A whole mesh's policy: defaults plus per-edge and per-service overrides, merged."""

    name: str = Field(min_length=1, max_length=100)
    edge_defaults: EdgePolicy = Field(default_factory=EdgePolicy)
    edges: dict[str, EdgePolicy] = {}
    server_defaults: MeshServerPolicy = Field(default_factory=MeshServerPolicy)
    servers: dict[str, MeshServerPolicy] = {}
    fallbacks: FallbackPolicy = Field(default_factory=FallbackPolicy)
    criticality: CriticalityPolicy = Field(default_factory=CriticalityPolicy)

    @model_validator(mode="after")
    def _known_names(self) -> MeshPolicy:
        known_edges = {e.name for e in topology.EDGES}
        known_services = {s.name for s in topology.SERVICES}
        for key in self.edges:
            if key not in known_edges:
                raise ValueError(
                    f"edges.{safe_yaml.short(key)}: unknown edge; known: {sorted(known_edges)}"
                )
        for key in self.servers:
            if key not in known_services:
                raise ValueError(
                    f"servers.{safe_yaml.short(key)}: unknown service; "
                    f"known: {sorted(known_services)}"
                )
        return self

    @model_validator(mode="after")
    def _pools_agree(self) -> MeshPolicy:
        """A caller builds one Bulkhead per pool from the first edge naming it: the others'
        settings would be ignored silently, so they must be the same."""
        first: dict[tuple[str, str], tuple[str, BulkheadPolicy]] = {}
        for e in topology.EDGES:
            bulkhead = self.edge(e.name).bulkhead
            if not bulkhead.enabled or bulkhead.pool is None:
                continue
            seen = first.setdefault((e.caller, bulkhead.pool), (e.name, bulkhead))
            if seen[1] != bulkhead:
                raise ValueError(
                    f"edges.{e.name}.bulkhead: pool {bulkhead.pool!r} is shared with "
                    f"{seen[0]}, so its bulkhead settings must be the same"
                )
        return self

    def edge(self, name: str) -> EdgePolicy:
        return self.edges.get(name, self.edge_defaults)

    def server(self, service_name: str) -> MeshServerPolicy:
        return self.servers.get(service_name, self.server_defaults)
