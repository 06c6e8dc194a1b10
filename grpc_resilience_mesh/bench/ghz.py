"""ghz (the field's gRPC load tool, built by `make peers` at v0.120.0) as a second, independent
client of `mesh bench mesh --client ghz`: GetHome through the same gateway, the same calls and calls
in flight on one connection as grpc_resilience_mesh.bench.mesh_client, so two clients written apart
measure the same thing and a disagreement between them is a finding.

ghz reads GetHome's schema from protos/ (the floor serves no reflection; the mesh does, and
`ghz --call mesh.v1.Gateway/GetHome` without `--proto` reaches it through reflection too). The
API key goes in a metadata file (mode 0600), never in argv. A fresh ghz process warms up first
(`warmup` calls, a run of its own), then the measured run: its requests/s is ghz's own (count /
total), its p50 / p99 its latency distribution's, and its CPU (utime+stime from wait4) is set
beside the client's so a client that saturated its core can be told apart from a slow mesh.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpc_resilience_mesh.bench.window import Window
from grpc_resilience_mesh.services import settings

ROOT = Path(__file__).resolve().parents[2]
PROTOS = ROOT / "protos"
GATEWAY_PROTO = PROTOS / "mesh" / "v1" / "gateway.proto"
CALL = "mesh.v1.Gateway.GetHome"
USER_ID = "u-0001"
PEERS_BIN = settings.Var(
    "MESH_PEERS_BIN", settings.text, "", "where `make peers` put ghz (default .peers/bin)"
)
RUN_TIMEOUT_S = 300.0


class GhzError(RuntimeError):
    """ghz is not built, or its run failed (its stderr says why)."""


def ghz_binary(environ: dict[str, str] | None = None) -> Path:
    """The built ghz (`$MESH_PEERS_BIN/ghz`, else .peers/bin/ghz); GhzError naming `make peers`."""
    path = Path(PEERS_BIN.read(environ) or ROOT / ".peers" / "bin") / "ghz"
    if not os.access(path, os.X_OK):
        raise GhzError(f"{path} is missing: run `make peers` (builds ghz v0.120.0; needs go)")
    return path


@dataclass(frozen=True)
class GhzWindow:
    """One measured ghz run."""

    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    cpu_s: float
    codes: dict[str, int]


def _percentile_ms(report: dict[str, Any], q: int) -> float:
    for point in report.get("latencyDistribution") or ():
        if int(point["percentage"]) == q:
            return float(point["latency"]) / 1e6
    raise GhzError(f"ghz reported no p{q}")


def parse_report(report: dict[str, Any], cpu_s: float) -> GhzWindow:
    """A window from ghz's `-O json` report (latencies in ns)."""
    return GhzWindow(
        requests=int(report["count"]),
        rps=float(report["rps"]),
        p50_ms=_percentile_ms(report, 50),
        p99_ms=_percentile_ms(report, 99),
        cpu_s=cpu_s,
        codes={str(k): int(v) for k, v in (report.get("statusCodeDistribution") or {}).items()},
    )


def ghz_command(
    ghz: Path, target: str, *, requests: int, concurrency: int, metadata_file: Path | None
) -> list[str]:
    args = [str(ghz), "--insecure", "--proto", str(GATEWAY_PROTO), "-i", str(PROTOS)]
    args += ["--call", CALL, "-d", json.dumps({"user_id": USER_ID})]
    # One core, as our client's one event loop: on 2 cores shared with the mesh, ghz on both
    # (its default) spent 0.36-0.43 ms of CPU per call against 0.29-0.31 on one, and its p99 was
    # 9-16% above ours on the floor in 3 idle runs; on one, -12% to +5% (docs/results/ghz.md).
    args += ["-n", str(requests), "-c", str(concurrency), "--connections", "1", "--cpus", "1"]
    args += ["--timeout", "10s", "-O", "json"]
    if metadata_file is not None:
        args += ["-M", str(metadata_file)]
    return [*args, target]


def _run(args: list[str]) -> tuple[dict[str, Any], float]:
    """ghz's JSON report and the CPU seconds it used."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            proc.returncode = 0  # reaped by wait4: Popen must not wait again
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise GhzError(f"ghz failed: {err.read().decode(errors='replace')[-600:]}")
        return json.loads(out.read()), usage.ru_utime + usage.ru_stime


def ghz_window(
    target: str, *, requests: int, concurrency: int, warmup: int, api_key: str | None
) -> GhzWindow:
    """A warm-up run, then the measured one; GhzError when a call failed in it."""
    ghz = ghz_binary()
    with tempfile.TemporaryDirectory(prefix="mesh-ghz-") as tmp:
        metadata_file = None
        if api_key:
            metadata_file = Path(tmp) / "metadata.json"
            fd = os.open(metadata_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump({"authorization": f"Bearer {api_key}"}, f)
        for count in (warmup, requests) if warmup else (requests,):
            args = ghz_command(
                ghz, target, requests=count, concurrency=concurrency, metadata_file=metadata_file
            )
            report, cpu_s = _run(args)
    codes = report.get("statusCodeDistribution") or {}
    failed = {code: n for code, n in codes.items() if code != "OK"}
    if failed:
        raise GhzError(f"GetHome calls failed under ghz: {failed}")
    return parse_report(report, cpu_s)


AGREEMENT = 0.10
"""Where ghz and our client differ by more than this share, the results say so."""


def spread(values: list[float]) -> float:
    """(max - min) / median over the rounds: how far one client's own figure moves."""
    return (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else 0.0


def compare(ours: dict[str, list[Window]], ghz: dict[str, list[GhzWindow]]) -> dict[str, Any]:
    """Per variant, both clients' req/s, p50, p99 (medians over rounds), each client's CPU per
    call and how busy it kept its core, ghz / ours for each figure, and each client's
    variant / floor throughput; `disagree` lists the figures more than 10% apart, and
    `within_spread` those of them no further apart than either client's own req/s moved
    from round to round (the machine's noise, not a client's error)."""
    rows: dict[str, dict[str, Any]] = {}
    for name, runs in ghz.items():
        mine = ours[name]
        row: dict[str, Any] = {
            "ours_rps": statistics.median(w.requests / w.elapsed_s for w in mine),
            "ours_p50_ms": statistics.median(w.p50_ms for w in mine),
            "ours_p99_ms": statistics.median(w.p99_ms for w in mine),
            "ours_client_cpu_ms": 1000
            * sum(w.cpu_s.get("client", 0.0) for w in mine)
            / sum(w.requests for w in mine),
            "ours_client_busy": statistics.median(
                w.cpu_s.get("client", 0.0) / w.elapsed_s for w in mine
            ),
            "ghz_rps": statistics.median(w.rps for w in runs),
            "ghz_p50_ms": statistics.median(w.p50_ms for w in runs),
            "ghz_p99_ms": statistics.median(w.p99_ms for w in runs),
            "ghz_client_cpu_ms": 1000 * sum(w.cpu_s for w in runs) / sum(w.requests for w in runs),
            "ghz_client_busy": statistics.median(w.cpu_s * w.rps / w.requests for w in runs),
        }
        for figure in ("rps", "p50_ms", "p99_ms"):
            row[f"{figure}_ghz_over_ours"] = row[f"ghz_{figure}"] / max(row[f"ours_{figure}"], 1e-9)
        row["ours_rps_spread"] = spread([w.requests / w.elapsed_s for w in mine])
        row["ghz_rps_spread"] = spread([w.rps for w in runs])
        row["disagree"] = [
            f for f in ("rps", "p50_ms", "p99_ms") if abs(row[f"{f}_ghz_over_ours"] - 1) > AGREEMENT
        ]
        row["within_spread"] = [
            f
            for f in row["disagree"]
            if abs(row[f"{f}_ghz_over_ours"] - 1)
            <= max(row["ours_rps_spread"], row["ghz_rps_spread"])
        ]
        rows[name] = row
    floor = rows.get("floor")
    for row in rows.values():
        if floor is not None:
            row["ours_rps_x_floor"] = row["ours_rps"] / floor["ours_rps"]
            row["ghz_rps_x_floor"] = row["ghz_rps"] / floor["ghz_rps"]
    return rows
