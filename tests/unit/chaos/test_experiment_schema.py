"""Experiment files: every catalogue entry loads; bad files name the file, the key and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.experiment import ExperimentError, catalogue, load_experiment

GOOD = """
title: t
hypothesis: h
faults:
  - {type: toxic, edge: gateway_to_profile, toxic: latency, attributes: {latency: 100}}
load: {rpc: [home], requests: 10, concurrency: 2}
variants: [{name: full}]
expectations: [{variant: full, metric: ok, min: 10}]
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return str(path)


def test_every_catalogue_experiment_loads() -> None:
    entries = catalogue()
    names = {p.stem for p, _ in entries}
    assert {
        "provider-outage",
        "fallback-trap",
        "bulkhead-isolation",
        "bulkhead-reject",
        "pushback",
        "deadline-budget",
        "payment-lost-response",
        "load-shedding",
        "flapping-dependency",
    } <= names
    for _, exp in entries:
        assert exp.hypothesis and exp.variants


def test_a_file_outside_the_repo_loads(tmp_path: Path) -> None:
    path, exp = load_experiment(write(tmp_path, GOOD))
    assert path.parent == tmp_path
    assert exp.faults[0].edge == "gateway_to_profile"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (("title: t", "title: t\ncolour: red"), "colour"),
        (("requests: 10", "requests: -3"), "load.requests"),
        (("edge: gateway_to_profile", "edge: gateway_to_moon"), "unknown edge"),
        (("toxic: latency", "toxic: lightning"), "toxic"),
        (("variant: full, metric", "variant: fast, metric"), "unknown variant"),
        (("latency: 100", "latency: -100"), "must be >= 0"),
        (("variants: [{name: full}]", "variants: []"), "variants"),
        (("hypothesis: h", "hypothesis: ''"), "hypothesis"),
    ],
)
def test_bad_files_name_the_file_and_key(
    tmp_path: Path, change: tuple[str, str], words: str
) -> None:
    text = GOOD.replace(*change)
    assert text != GOOD
    path = write(tmp_path, text)
    with pytest.raises(ExperimentError) as info:
        load_experiment(path)
    assert path in str(info.value)
    assert words in str(info.value)


def test_app_fault_code_must_be_a_status_name(tmp_path: Path) -> None:
    text = GOOD.replace(
        "  - {type: toxic, edge: gateway_to_profile, toxic: latency, attributes: {latency: 100}}",
        "  - {type: app_fault, service: profile, method: GetProfile, code: SORT_OF_BROKEN}",
    )
    with pytest.raises(ExperimentError, match="SORT_OF_BROKEN"):
        load_experiment(write(tmp_path, text))


def test_unknown_name_lists_the_catalogue() -> None:
    with pytest.raises(ExperimentError, match="provider-outage"):
        load_experiment("no-such-experiment")


def test_not_yaml(tmp_path: Path) -> None:
    with pytest.raises(ExperimentError, match="not valid YAML"):
        load_experiment(write(tmp_path, "title: [unclosed"))
