"""Trace expectations (issue 44 item 4) on the whole mesh, driven through `mesh chaos run`: each
rule the catalogue uses holds with its mechanism on and breaks with it off, judged on the
traces the services wrote, and the report names the traces that broke it.

- max_attempts_per_request: retry.max_attempts 3 holds a bound of 3; raised to 5 (the breaker
  opens on the 5th consecutive failure, so the first request makes all 5) it breaks.
- breaker_open_then_fallback: behind Recommend the gateway's fallback answers every request an
  open breaker refused; behind Charge there is no fallback, and every refused checkout breaks
  it. (no_attempt_after_deadline has no switch: the library caps every call by the inbound
  deadline unconditionally; its rule is tested on spans in tests/unit/chaos/test_trace_rules.py.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

EXPERIMENT = """
title: Trace rules with their mechanism on and off
hypothesis: A trace rule holds while its mechanism is on and breaks when it is off.
dependency: recommendation
dependency_method: Recommend
checks: [traces]
steady_state:
  load: {rpc: [home], requests: 10, concurrency: 2, deadline_s: 5}
faults:
  - {type: app_fault, service: recommendation, method: Recommend, error_rate: 1.0,
     code: UNAVAILABLE}
load: {rpc: [home], requests: 10, concurrency: 1, deadline_s: 5}
variants:
  - name: attempts-3
    overrides:
      edges:
        gateway_to_recommendation:
          retry: {max_attempts: 3, budget: {enabled: false}}
          breaker: {consecutive_failures: 5, failure_rate: null, open_s: 30}
  - name: attempts-5
    overrides:
      edges:
        gateway_to_recommendation:
          retry: {max_attempts: 5, budget: {enabled: false}}
          breaker: {consecutive_failures: 5, failure_rate: null, open_s: 30}
  - name: fallback
    overrides:
      edges:
        gateway_to_recommendation:
          breaker: {consecutive_failures: 2, failure_rate: null, open_s: 30}
  - name: no-fallback
    load: {rpc: [checkout]}
    faults:
      - {type: app_fault, service: payment, method: Charge, error_rate: 1.0, code: UNAVAILABLE}
    overrides:
      edges:
        gateway_to_payment:
          breaker: {consecutive_failures: 2, failure_rate: null, open_s: 30}
expectations:
  - {variant: attempts-3, traces: {max_attempts_per_request: 3}}
  - {variant: attempts-5, traces: {max_attempts_per_request: 3}}
  - {variant: fallback, traces: breaker_open_then_fallback}
  - {variant: no-fallback, traces: breaker_open_then_fallback}
"""


def test_each_trace_rule_breaks_when_its_mechanism_is_off(tmp_path: Path) -> None:
    path = tmp_path / "trace-rules.yaml"
    path.write_text(EXPERIMENT)
    out = tmp_path / "out.json"
    command = [sys.executable, "-m", "grpc_resilience_mesh.cli", "chaos", "run", str(path)]
    command += ["--json", str(out), "--reports", str(tmp_path / "reports")]
    command += ["--state-dir", str(tmp_path / "state")]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the off variants miss
    [result] = json.loads(out.read_text())
    phases = {v["name"]: v["phases"]["fault"] for v in result["variants"]}
    broken = {
        name: phase["metrics"][f"traces_broken.{rule}"]
        for name, phase in phases.items()
        for rule in ("max_attempts_per_request", "breaker_open_then_fallback")
        if f"traces_broken.{rule}" in phase["metrics"]
    }
    assert broken["attempts-3"] == 0 and broken["fallback"] == 0, broken
    assert broken["attempts-5"] >= 1 and broken["no-fallback"] >= 1, broken
    for name, phase in phases.items():
        assert phase["metrics"]["traces_checked"] == 10, (name, phase["metrics"])
    passed = {v["variant"]: v["passed"] for v in result["verdicts"]}
    assert passed["attempts-3"] and passed["fallback"] and not passed["attempts-5"], passed
    [(rule, listed)] = phases["attempts-5"]["trace_rules"].items()
    assert rule == "max_attempts_per_request <= 3"
    assert all("attempts (at most 3)" in b["why"] for b in listed["broken"]), listed
    report = (tmp_path / "reports" / "trace-rules" / "report.md").read_text()
    first = listed["broken"][0]["trace_id"]
    assert f"`{first}`: Sent.mesh.v1.RecommendationService.Recommend made" in report
    refused = int(broken["no-fallback"])
    assert f"no-fallback, breaker_open_then_fallback: 10 traces, {refused} broke it:" in report
