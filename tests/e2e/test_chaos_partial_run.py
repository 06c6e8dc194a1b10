"""A real `mesh chaos run` whose xds variant cannot run (mesh-xds taken away): the experiment is
partial, not held, in the totals line, result.json, the journal and the JUnit file, and the run
exits 5. In this process, so the binary's path can be pointed at nothing."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.run import xds_wiring
from grpc_resilience_mesh.cli.app import app

pytestmark = pytest.mark.e2e

WITH_XDS = """
title: short outage of recommendations, once under xDS
hypothesis: the full policy answers every home request, degraded, under xDS or not
dependency: recommendation
dependency_method: Recommend
steady_state:
  load: {rpc: [home], requests: 4, concurrency: 2}
faults:
  - {type: app_fault, service: recommendation, method: Recommend, error_rate: 1.0,
     code: UNAVAILABLE}
load: {rpc: [home], requests: 20, concurrency: 4, deadline_s: 3}
variants:
  - name: full
  - name: full-xds
    xds: true
expectations:
  - {variant: full, metric: ok, min: 20}
  - {variant: full-xds, metric: ok, min: 20}
"""


def test_a_run_with_a_skipped_variant_is_partial_and_exits_5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-mesh-xds"
    monkeypatch.setattr(xds_wiring, "XDS_BINARY", missing)
    exp = tmp_path / "with-xds.yaml"
    exp.write_text(WITH_XDS)
    out, junit, reports = tmp_path / "out.json", tmp_path / "run.xml", tmp_path / "reports"
    args = ["chaos", "run", str(exp), "--json", str(out), "--junit", str(junit)]
    args += ["--reports", str(reports), "--state-dir", str(tmp_path / "state")]
    ran = CliRunner().invoke(app, args)
    text = " ".join(ran.output.split())
    assert ran.exit_code == 5, text[-3000:]
    reason = f"full-xds skipped: an xds variant needs {missing}"
    assert f"0 of 1 hypotheses held, 1 partial (with-xds: {reason}" in text
    [result] = json.loads(out.read_text())
    assert (result["held"], result["verdict"]) == (False, "partial (1 of 2 variants ran)")
    assert result["variants"][0]["phases"]["fault"]["metrics"]["ok"] == 20  # full ran and held
    journal = json.loads((reports / "with-xds" / "journal.json").read_text())
    assert journal["status"] == "failed"
    cases = ET.parse(junit).getroot().findall("testsuite/testcase")
    outcome = {c.get("classname"): [ch.tag for ch in c if ch.tag != "properties"] for c in cases}
    assert outcome == {"with-xds.full": [], "with-xds.full-xds": ["skipped"]}
    [skipped] = ET.parse(junit).getroot().iter("skipped")
    assert skipped.get("message", "").startswith(reason)
