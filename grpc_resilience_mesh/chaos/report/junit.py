"""JUnit XML, the report format CI systems read (GitHub Actions' test reporters, GitLab's
`artifacts:reports:junit`, Jenkins): one <testsuite> per experiment (or comparison), one
<testcase> per expectation or regression check. A failure carries the measured value, the
bound and the bound's why in its message, so the CI page says what broke without the run's
files. Written with the standard library's ElementTree: the schema is the de facto one
(Jenkins' junit.xsd) that every reader accepts."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Outcome = Literal["passed", "failed", "skipped", "error"]


@dataclass(frozen=True)
class Case:
    """One check. `message` is the one line a CI page shows beside a failure or skip;
    `detail` the longer text under it (the figures, the traces that broke it)."""

    name: str
    classname: str
    outcome: Outcome = "passed"
    message: str = ""
    detail: str = ""
    time_s: float = 0.0
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Suite:
    name: str
    cases: Sequence[Case]
    time_s: float = 0.0
    properties: Mapping[str, str] = field(default_factory=dict)


def junit_xml(suites: Iterable[Suite], name: str = "mesh chaos") -> str:
    """The document as text: a <testsuites> root with the totals CI readers sum."""
    suites = list(suites)
    root = ET.Element("testsuites", name=name)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        element = _suite(suite)
        root.append(element)
        for key in totals:
            totals[key] += int(element.get(key, "0"))
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{sum(s.time_s for s in suites):.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(path: Path, suites: Iterable[Suite], name: str = "mesh chaos") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(suites, name), encoding="utf-8")


def _suite(suite: Suite) -> ET.Element:
    counts = {o: sum(c.outcome == o for c in suite.cases) for o in ("failed", "error", "skipped")}
    element = ET.Element(
        "testsuite",
        name=suite.name,
        tests=str(len(suite.cases)),
        failures=str(counts["failed"]),
        errors=str(counts["error"]),
        skipped=str(counts["skipped"]),
        time=f"{suite.time_s:.3f}",
    )
    _properties(element, suite.properties)
    for case in suite.cases:
        element.append(_case(case))
    return element


def _case(case: Case) -> ET.Element:
    element = ET.Element(
        "testcase", name=case.name, classname=case.classname, time=f"{case.time_s:.3f}"
    )
    _properties(element, case.properties)
    tag = {"failed": "failure", "error": "error", "skipped": "skipped"}.get(case.outcome)
    if tag is not None:
        child = ET.SubElement(element, tag, message=case.message)
        if tag != "skipped":
            child.set("type", "RegressionOrMiss" if tag == "failure" else "RunError")
        if case.detail:
            child.text = case.detail
    return element


def _properties(element: ET.Element, properties: Mapping[str, str]) -> None:
    if properties:
        holder = ET.SubElement(element, "properties")
        for key, value in properties.items():
            ET.SubElement(holder, "property", name=key, value=str(value))
