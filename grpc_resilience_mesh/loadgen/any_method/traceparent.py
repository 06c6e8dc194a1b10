"""Each load call's W3C trace: a fresh sampled `traceparent` per call, unless the caller's own
metadata sets one, so a report can name the trace of any call it lists."""

from __future__ import annotations

import re
import secrets

from grpc_resilience_mesh.loadgen.any_method.templating import Metadata

HEADER = "traceparent"
# version-traceid-parentid-flags; an all-zero trace id is invalid, and a receiver drops it.
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")
_ZERO = "0" * 32


def trace_id_of(traceparent: str) -> str:
    """The trace id a valid traceparent carries; "" when a receiver would not continue it."""
    value = traceparent.strip()
    found = _TRACEPARENT.fullmatch(value)
    if found is None or found.group(1) == _ZERO or value.startswith("ff"):  # ff: invalid version
        return ""
    return found.group(1)


def with_traceparent(metadata: Metadata) -> tuple[str, Metadata]:
    """The call's trace id and the metadata to send. A traceparent the caller set is sent as
    it is and its trace id returned (the services continue that trace, not one of ours);
    otherwise a fresh sampled one is added, so the services record the call's spans."""
    for key, value in metadata:
        if key == HEADER:
            return trace_id_of(value), metadata
    trace_id = secrets.token_hex(16)
    return trace_id, (*metadata, (HEADER, f"00-{trace_id}-{secrets.token_hex(8)}-01"))
