"""Which criticality the gateway gives each public RPC (the policy's `criticality:` section).

A public client cannot choose its own: the gateway sets one per RPC from this table, and every
hop behind it passes that value on (grpc_aio_resilience.criticality).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from grpc_aio_resilience import Criticality
from grpc_resilience_mesh.services import safe_yaml
from grpc_resilience_mesh.services.v1 import gateway_pb2

CriticalityName = Literal["SHEDDABLE", "SHEDDABLE_PLUS", "CRITICAL", "CRITICAL_PLUS"]
GATEWAY_METHODS = frozenset(gateway_pb2.DESCRIPTOR.services_by_name["Gateway"].methods_by_name)


def _user_facing() -> dict[str, CriticalityName]:
    return {"GetHome": "CRITICAL", "Checkout": "CRITICAL"}


class CriticalityPolicy(BaseModel):
    """Criticality per gateway RPC, a default for the others, and the popular-list refresh's."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    default: CriticalityName = Field(
        default="CRITICAL", description="gateway RPCs not listed in `rpcs`"
    )
    rpcs: dict[str, CriticalityName] = Field(
        default_factory=_user_facing,
        max_length=64,
        description="gateway method name (e.g. GetHome) -> criticality",
    )
    popular_refresh: CriticalityName = Field(
        default="SHEDDABLE",
        description="the gateway's refresh of its cached popular list (a fallback's fallback)",
    )

    @field_validator("rpcs")
    @classmethod
    def _gateway_methods(cls, rpcs: dict[str, CriticalityName]) -> dict[str, CriticalityName]:
        for method in rpcs:
            if method not in GATEWAY_METHODS:
                raise ValueError(
                    f"{safe_yaml.short(method)!r} is not a gateway method; known: "
                    f"{sorted(GATEWAY_METHODS)}"
                )
        return rpcs

    def for_rpc(self, method: str) -> Criticality:
        """The criticality of a gateway call to `method` (a full /pkg.Service/Method name or
        the bare method name)."""
        name = self.rpcs.get(method.rpartition("/")[2], self.default)
        return Criticality[name]

    def for_popular_refresh(self) -> Criticality:
        return Criticality[self.popular_refresh]
