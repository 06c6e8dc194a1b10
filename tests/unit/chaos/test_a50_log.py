"""A50's ejections read from gRPC core's outlier_detection_lb trace (lines as grpcio 1.85
writes them): only an instance given the dependency's addresses counts, from its creation."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

from grpc_resilience_mesh.chaos.scenarios import a50_log

PROFILE = {"127.0.0.1:53699", "127.0.0.1:37695"}


def _line(clock: str, lb: str, text: str) -> str:
    return f"I1202 {clock}   27929 outlier_detection.cc:977] [outlier_detection_lb {lb}] {text}"


def _log(lb: str, addresses: list[str], ejected: list[str]) -> list[str]:
    lines = [_line("08:51:25.000000", lb, "created")]
    lines += [_line("08:51:25.000001", lb, f"adding address entry for {a}") for a in addresses]
    return lines + [_line(clock, lb, "ejecting candidate") for clock in ejected]


def test_an_ejection_counts_for_the_instance_given_the_dependencys_addresses() -> None:
    payment = _log("0xaa", ["127.0.0.1:41593"], ["08:51:27.000000"])
    profile = _log("0xbb", sorted(PROFILE), ["08:51:28.500000", "08:51:34.250000"])
    noise = ['{"msg": "a JSON line of our own"}', _line("08:51:26.0", "0xbb", "timer running")]
    found = a50_log.ejections([*payment, *noise, *profile], PROFILE)
    year = datetime.now().year
    assert found == [
        datetime(year, 12, 2, 8, 51, 28, 500000).timestamp(),
        datetime(year, 12, 2, 8, 51, 34, 250000).timestamp(),
    ]


def test_a_pointer_reused_by_a_restarted_process_forgets_the_old_addresses() -> None:
    old = _log("0xcc", sorted(PROFILE), [])
    reused = _log("0xcc", ["127.0.0.1:41593"], ["08:52:00.000000"])
    assert a50_log.ejections([*old, *reused], PROFILE) == []


def test_the_callers_logs_give_monotonic_times_oldest_first(tmp_path: Path) -> None:
    (tmp_path / "xds").mkdir()
    nodes = {c: {"profile": {"endpoints": sorted(PROFILE)}} for c in ("gateway", "recommendation")}
    (tmp_path / "xds" / "xds.json").write_text(json.dumps({"nodes": nodes}))
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "recommendation-2.log").write_text(
        "\n".join(_log("0x1", sorted(PROFILE), ["08:51:27.000000"]))
    )
    (logs / "gateway.log").write_text("\n".join(_log("0x2", sorted(PROFILE), ["08:51:29.000000"])))
    (logs / "payment.log").write_text("\n".join(_log("0x3", sorted(PROFILE), ["08:51:26.000000"])))
    found = a50_log.ejected_at(tmp_path, "profile")
    offset = time.time() - time.monotonic()
    year = datetime.now().year
    want = [datetime(year, 12, 2, 8, 51, s).timestamp() - offset for s in (27, 29)]
    assert [round(t, 2) for t in found] == [round(t, 2) for t in want]
