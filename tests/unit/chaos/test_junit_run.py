"""`mesh chaos run --junit`: the file parses with the standard parser, has a testsuite per
experiment and a testcase per expectation (classname experiment.variant); a miss is a failure
carrying the measured value, the bound and its why; a skipped variant's expectations are
skipped with the reason, an errored one's are errors."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from grpc_resilience_mesh.chaos.report.junit import Suite, write_junit
from grpc_resilience_mesh.chaos.report.junit_run import (
    bound_text,
    case_name,
    run_suites,
    topology_suite,
)
from grpc_resilience_mesh.chaos.results import ExperimentResult
from tests.unit.chaos.test_partial_verdict import NO_XDS, fault_sources, held_one


def _written(tmp_path: Path, results: list[ExperimentResult]) -> ET.Element:
    path = tmp_path / "chaos.xml"
    write_junit(path, run_suites(results))
    return ET.parse(path).getroot()


def _expected(result: ExperimentResult) -> set[tuple[str, str]]:
    return {
        (f"{result.name}.{e.variant}", case_name(e.phase, e.metric, bound_text(e.min, e.max)))
        for e in result.experiment.expectations
    }


def test_every_expectation_is_a_testcase_and_a_skipped_variant_says_why(tmp_path: Path) -> None:
    partial, missed = fault_sources(), fault_sources(degraded=0.05)
    missed.name = "fault-sources-missed"
    root = _written(tmp_path, [held_one(), partial, missed])
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert list(suites) == ["held-one", "fault-sources", "fault-sources-missed"]
    for result in (partial, missed):
        cases = suites[result.name].findall("testcase")
        assert {(c.get("classname"), c.get("name")) for c in cases} == _expected(result)
        assert len(cases) == len(result.experiment.expectations)
    skipped = suites["fault-sources"].findall("testcase/skipped")
    assert len(skipped) == 4  # xds-abort's four expectations
    assert {s.get("message") for s in skipped} == {f"xds-abort skipped: {NO_XDS}"}
    assert suites["fault-sources"].get("skipped") == "4"
    assert suites["fault-sources"].get("failures") == "0"
    [prop] = suites["fault-sources"].findall("properties/property[@name='verdict']")
    assert prop.get("value") == "partial (2 of 3 variants ran)"
    [failure] = suites["fault-sources-missed"].findall("testcase/failure")
    assert failure.get("message") == "degraded_rate = 0.05 (want >= 0.2565 and <= 0.3435)"
    assert "the interceptor's 30%" in (failure.text or "")
    assert root.get("tests") == str(sum(len(s.findall("testcase")) for s in suites.values()))


def test_an_errored_variant_is_an_error_and_repeats_say_how_many_held(tmp_path: Path) -> None:
    errored = fault_sources(error="policy swap failed, no variant measured: refused")
    root = _written(tmp_path, [errored])
    errors = root.findall("testsuite/testcase/error")
    assert len(errors) == 4 and root.get("errors") == "4"
    assert errors[0].get("message") == (
        "xds-abort error: policy swap failed, no variant measured: refused"
    )
    first, last = fault_sources(degraded=0.05), fault_sources()
    last.repeats = [first, last]
    root = _written(tmp_path, [last])
    [failure] = root.findall("testsuite/testcase/failure")
    assert failure.get("message") == (
        "degraded_rate = 0.175 [0.05-0.3] held 1/2 (want >= 0.2565 and <= 0.3435)"
    )


def test_a_topology_run_is_a_suite_of_its_expectations(tmp_path: Path) -> None:
    result = {
        "verdict": "not held",
        "exit_code": 1,
        "expectations": [
            {
                "metric": "error_rate",
                "max": 0.1,
                "min": None,
                "value": 0.25,
                "held": False,
                "why": "the retry hides one failure in ten",
            },
            {
                "metric": "requests",
                "max": None,
                "min": 100,
                "value": 100.0,
                "held": True,
                "why": "",
            },
        ],
    }
    path = tmp_path / "topology.xml"
    write_junit(path, [topology_suite("my-outage", result)])
    [suite] = ET.parse(path).getroot().iter("testsuite")
    names = [c.get("name") for c in suite.iter("testcase")]
    assert names == ["error_rate <= 0.1", "requests >= 100"]
    [failure] = suite.iter("failure")
    assert failure.get("message") == "error_rate = 0.25 (want <= 0.1)"
    assert failure.text == "the retry hides one failure in ten"
    guarded = topology_suite("my-outage", {**result, "exit_code": 3, "verdict": "aborted by guard"})
    assert [e.get("message") for e in guarded_errors(tmp_path, guarded)] == ["aborted by guard"]


def guarded_errors(tmp_path: Path, suite: Suite) -> list[ET.Element]:
    path = tmp_path / "guarded.xml"
    write_junit(path, [suite])
    return ET.parse(path).getroot().findall("testsuite/testcase/error")
