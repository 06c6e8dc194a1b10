"""A synthetic traces directory as large as `mesh up` lets one grow, for timing `mesh traces ID`.

Seven processes each keep a span file and one rotated generation of up to 64 MiB
(MESH_TRACES_MAX_BYTES, MESH_TRACES_BACKUPS): 14 files, about 900 MB. The lines are shaped like the
exporter's (grpc_resilience_mesh.services.telemetry.tracing.span_json), SPANS_PER_TRACE to a trace,
with random trace ids (so each of the index's 16 shards holds its share).
"""

from __future__ import annotations

import random
from pathlib import Path

PROCESSES = ("gateway", "gateway-2", "profile", "profile-2", "recommendation", "payment", "mail")
TRACES_MB = 900
SPANS_PER_TRACE = 5
TRACES_PER_WRITE = 200
T0_NS = 1_700_000_000_000_000_000

_SPAN = (
    '{"trace_id":"%032x","span_id":"%016x","parent_span_id":%s,'
    '"name":"Sent.mesh.v1.Profile/GetProfile","kind":"CLIENT","service":"%s",'
    '"start_ns":%d,"end_ns":%d,"status":{"code":"UNSET","description":null},'
    '"attributes":{"rpc.system":"grpc","rpc.service":"mesh.v1.Profile",'
    '"rpc.method":"GetProfile","rpc.grpc.status_code":0,"mesh.edge":"gateway_to_profile",'
    '"mesh.attempt":%d,"net.peer.name":"127.0.0.1","net.peer.port":50061},'
    '"events":[{"name":"retry scheduled","time_ns":%d,'
    '"attributes":{"delay_s":0.05,"reason":"UNAVAILABLE"}}]}\n'
)


def _trace(rng: random.Random, service: str, start_ns: int) -> str:
    trace_id, root = rng.getrandbits(128), rng.getrandbits(64)
    lines = [
        _SPAN
        % (
            trace_id,
            root if n == 0 else rng.getrandbits(64),
            "null" if n == 0 else f'"{root:016x}"',
            service,
            start_ns + n * 1_000,
            start_ns + n * 1_000 + 800_000,
            n,
            start_ns + n * 1_000 + 400_000,
        )
        for n in range(SPANS_PER_TRACE)
    ]
    return "".join(lines)


def write_spans(folder: Path, total_bytes: int, seed: int = 28) -> tuple[str, int]:
    """About `total_bytes` of span lines in `folder`, each process's `.jsonl` and `.jsonl.1`
    alike; a trace id from the middle of the volume, and the bytes written."""
    rng = random.Random(seed)
    names = [f"{p}.jsonl{suffix}" for p in PROCESSES for suffix in (".1", "")]
    per_file = total_bytes // len(names)
    wanted, written, start_ns = "", 0, T0_NS
    for k, name in enumerate(names):
        with (folder / name).open("w", encoding="ascii") as out:
            size, trace_bytes = 0, len(_trace(rng, "", 0))
            while size < per_file:
                block = []
                for _ in range(min(TRACES_PER_WRITE, (per_file - size) // trace_bytes + 1)):
                    block.append(_trace(rng, name.split(".")[0], start_ns))
                    start_ns += 1_000_000
                size += out.write("".join(block))
                if not wanted and k == len(names) // 2:
                    wanted = block[len(block) // 2][len('{"trace_id":"') :][:32]
        written += size
    return wanted, written
