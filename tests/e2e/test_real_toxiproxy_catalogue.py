"""provider-outage and flapping-dependency through real Toxiproxy 2.12 and through the embedded
server, as `mesh chaos run --toxiproxy real|embedded` runs them; the calls that reached the
dependency, the failures while it was down and the recovery after it agree.

Shortened copies of the catalogue's files keep this to about a minute: each experiment's `full`
variant only, the one compared (provider-outage's fault and recovery unchanged;
flapping-dependency's xds-native left out, with its restart of every service into xDS and back),
flapping-dependency over one down/up cycle.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from grpc_resilience_mesh.chaos.experiment.model import EXPERIMENTS_DIR
from grpc_resilience_mesh.services import safe_yaml
from tests.support.peers import peer_binary

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]


def only_full(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with its `full` variant alone, the only one `run` reads, and its capacity measured
    over 200 requests rather than 1,000: no figure compared here is a ratio to the capacity, and
    flapping-dependency's open loop at 0.2x of it only needs arrivals every few tens of ms."""
    doc["variants"] = [v for v in doc["variants"] if v["name"] == "full"]
    doc["expectations"] = [e for e in doc["expectations"] if e["variant"] == "full"]
    doc["demo_variants"] = [d for d in doc.get("demo_variants", []) if d == "full"]
    doc["load"]["capacity_requests"] = 200
    return doc


def shortened(tmp_path: Path) -> list[Path]:
    outage = only_full(safe_yaml.load_file(str(EXPERIMENTS_DIR / "provider-outage.yaml")))
    flapping = only_full(safe_yaml.load_file(str(EXPERIMENTS_DIR / "flapping-dependency.yaml")))
    flapping["faults"][0].update(start_s=1.0, stop_s=9.0)  # down 1-5 s, up 5-9 s
    flapping["load"]["max_duration_s"] = 10
    paths = []
    for name, doc in (("provider-outage", outage), ("flapping-dependency", flapping)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        paths.append(path)
    return paths


def run(tmp_path: Path, server: str, experiments: list[Path]) -> dict[str, dict[str, Any]]:
    """`mesh chaos run ... --toxiproxy SERVER`; each experiment's fault-phase metrics of `full`."""
    out = tmp_path / f"{server}.json"
    args = [
        sys.executable,
        "-m",
        "grpc_resilience_mesh.cli",
        "chaos",
        "run",
        *map(str, experiments),
    ]
    args += ["--toxiproxy", server, "--json", str(out), "--reports", str(tmp_path / server)]
    args += ["--state-dir", str(tmp_path / f"var-{server}")]
    done = subprocess.run(args, capture_output=True, text=True, timeout=240)
    # 1 = a hypothesis did not hold: a verdict, which `make verify` judges; this test compares
    # what reached the dependency. Anything else (2 bad input, a crash) fails here.
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    return {
        r["name"]: next(v for v in r["variants"] if v["name"] == "full")["phases"]["fault"][
            "metrics"
        ]
        for r in results
    }


def test_dependency_calls_agree_between_real_and_embedded_toxiproxy(tmp_path: Path) -> None:
    peer_binary("toxiproxy-server")
    experiments = shortened(tmp_path)
    real = run(tmp_path, "real", experiments)
    embedded = run(tmp_path, "embedded", experiments)
    # provider-outage: the hang is the proxy's latency toxic; in both, the breaker lets the 10
    # first attempts and at most 4 retries through (the expectation's C + T - 1 = 14).
    for metrics in (real, embedded):
        assert 10 <= metrics["provider-outage"]["dependency_calls"] <= 14, metrics
    # flapping-dependency: the proxy is disabled 4 s (1-5 s), then up. Through both servers a
    # checkout that starts while it is down fails, unless it is still retrying when the proxy
    # comes back (backoff at most 0.5 s: the window's last 0.5 s of 4, 12.5%); and checkouts
    # succeed again within the breaker's 2 s open time + 1 s after the up (the experiment's own
    # bound). The share of checkouts that reached payment is not compared between the two: it
    # turns on whether the breaker's probe failed just before the up (then it stays open up to
    # 2 s of the 4 s up), which differs from run to run whichever proxy runs (05e2c75: real
    # 0.40 after a 1.89 s recovery, embedded 0.60 after 0.02 s).
    for name, m in (("real", real), ("embedded", embedded)):
        flap = m["flapping-dependency"]
        assert flap["outages"] == 1, (name, flap)
        assert flap["errors_while_down"] >= 0.85 * flap["requests_while_down"] > 0, (name, flap)
        assert flap["recover_max_s"] <= 3.0, (name, flap)
        assert 0.1 <= flap["dependency_calls"] / flap["requests"] <= 0.9, (name, flap)
