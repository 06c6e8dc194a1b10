"""What the runner and the load generator process say to each other.

The runner writes one JSON plan on the generator's stdin: the target, the mode (open loop at
`rate_per_s` with at most `concurrency` in flight, or `concurrency` closed-loop workers with
`think_s`), and one entry per request (its RPC, user, amount, idempotency key and trace id,
all chosen by the runner, so the generator does no per-request work but timing). The
generator serialises every request before it starts, then streams its outcomes as batches
on stdout, one line each:

    R <json list of records>     a record per finished request (RECORD_FIELDS)
    E <json summary>             the end: elapsed_s and the generator's own cpu_s

A line `stop` on its stdin ends the load early (the runner's abort condition); closing stdin
does too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

RECORD_FIELDS = (
    "index",
    "started_s",
    "latency_s",
    "code",
    "degraded",
    "status",
    "charge_id",
    "pushback_ms",
    "detail",
    "fate",
)
"""A record is a JSON list in this order: the plan's request index, its start (perf_counter,
the same monotonic clock in every process), its latency, its status code name, the degraded
parts joined by ',', a checkout's status and charge id, the pushback trailer in ms (or null)
the status details of a failure (cut to 160 characters) and the fate the answer's `resilience-fate`
trailer carried ("" when none: grpc_aio_resilience.fates.seen_by_caller fills it in)."""

Record = tuple[int, float, float, str, str, str, str, int | None, str, str]


@dataclass(frozen=True)
class Request:
    """One call the generator sends: chosen by the runner."""

    rpc: str
    user: int
    amount_cents: int = 0
    key: str = ""
    trace_id: str = ""
    span_id: str = ""


@dataclass
class Plan:
    target: str
    requests: list[Request]
    concurrency: int = 1
    rate_per_s: float | None = None
    think_s: float = 0.0
    timeout_s: float = 2.0
    max_duration_s: float = 120.0
    client_retries: int = 0
    api_key: str | None = None
    batch_s: float = 0.2
    extra: dict[str, Any] = field(default_factory=dict)

    def dumps(self) -> str:
        # Not asdict(): it deep-copies every request first (8 s for a 100,000-request plan).
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["requests"] = [
            [r.rpc, r.user, r.amount_cents, r.key, r.trace_id, r.span_id] for r in self.requests
        ]
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def loads(cls, text: str) -> Plan:
        data = json.loads(text)
        data["requests"] = [Request(*r) for r in data["requests"]]
        return cls(**data)


def encode_records(records: list[Record]) -> str:
    return "R " + json.dumps(records, separators=(",", ":")) + "\n"


def encode_end(elapsed_s: float, cpu_s: float | None) -> str:
    return "E " + json.dumps({"elapsed_s": elapsed_s, "cpu_s": cpu_s}) + "\n"


def decode(line: str) -> tuple[str, Any]:
    """('R', [Record...]) or ('E', summary); ValueError on anything else."""
    line = line.strip()
    kind, _, body = line.partition(" ")
    if kind == "R":
        return "R", [tuple(r) for r in json.loads(body)]
    if kind == "E":
        return "E", json.loads(body)
    raise ValueError(f"load generator said {line[:120]!r}")
