"""The JUnit writer's document parses with a standard parser and carries each case's outcome,
message and detail where CI readers look for them."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from grpc_resilience_mesh.chaos.report.junit import Case, Suite, write_junit


def test_a_suite_counts_its_outcomes_and_a_failure_carries_its_figures(tmp_path: Path) -> None:
    cases = [
        Case("goodput >= 0.9", "retry.budget", "passed", time_s=1.5),
        Case("p99 <= 0.8 s", "retry.budget", "failed", "measured 1.2 s, bound 0.8 s", "why"),
        Case("xds-abort", "fault-sources", "skipped", "needs .peers/bin/mesh-xds"),
        Case("run", "fault-sources", "error", "the mesh did not start"),
    ]
    path = tmp_path / "out" / "junit.xml"
    write_junit(path, [Suite("provider-outage", cases, 3.0, {"commit": "abc"})])
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "4",
        "1",
        "1",
        "1",
    )
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "provider-outage"
    names = [c.get("name") for c in suite.iter("testcase")]
    assert names == ["goodput >= 0.9", "p99 <= 0.8 s", "xds-abort", "run"]
    failure = suite.find("testcase[@name='p99 <= 0.8 s']/failure")
    assert failure is not None and failure.get("message") == "measured 1.2 s, bound 0.8 s"
    assert failure.text == "why"
    assert suite.find("testcase[@name='xds-abort']/skipped") is not None
    assert suite.find("testcase[@name='goodput >= 0.9']/failure") is None
    prop = suite.find("properties/property[@name='commit']")
    assert prop is not None and prop.get("value") == "abc"
