"""What the runner chooses before a load: every request of a plan, and a call's metadata
(its API key and a fresh sampled trace, so a report can name the trace of any request)."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Sequence
from typing import Any

from grpc_resilience_mesh.loadgen.protocol import Plan, Request
from grpc_resilience_mesh.services.customers import USER_COUNT

Metadata = tuple[tuple[str, str], ...]


def metadata_for(api_key: str | None) -> Metadata:
    return (("authorization", f"Bearer {api_key}"),) if api_key else ()


def traced(md: Metadata) -> tuple[str, Metadata]:
    """A fresh sampled W3C traceparent for one request, so the report can name its trace."""
    trace_id = secrets.token_hex(16)
    return trace_id, (*md, ("traceparent", f"00-{trace_id}-{secrets.token_hex(8)}-01"))


def plan_for(
    gateway: str, requests: int, rpc_mix: Sequence[str] = ("home",), **options: Any
) -> Plan:
    """The generator's plan: every request's RPC, user, key and trace id chosen here; the
    `options` are the Plan's (concurrency, rate_per_s, think_s, timeout_s, ...)."""
    chosen = []
    for n in range(requests):
        rpc = rpc_mix[n % len(rpc_mix)]
        chosen.append(
            Request(
                rpc,
                n % USER_COUNT + 1,
                1000 + n % 500,
                f"load-{uuid.uuid4().hex}" if rpc == "checkout" else "",
                secrets.token_hex(16),
                secrets.token_hex(8),
            )
        )
    return Plan(gateway, chosen, **options)
