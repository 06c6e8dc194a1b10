"""`mesh chaos validate` names every error of a file at once: a bad fault (a misspelled toxic
attribute, type or edge) no longer hides an unknown metric or check beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.experiment.toxic_rules import TOXIC_NAMES

GOOD = """
title: t
hypothesis: h
faults:
  - {type: toxic, edge: gateway_to_profile, toxic: latency, attributes: {latency: 100}}
variants: [{name: full}, {name: none, faults: [{type: kill, service: profile-2}]}]
expectations: [{variant: full, metric: p99_ms, max: 1000}]
"""


def errors_of(tmp_path: Path, text: str) -> str:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(ExperimentError) as err:
        load_experiment(str(path))
    return str(err.value)


def test_a_misspelled_attribute_and_an_unknown_metric_are_both_named(tmp_path: Path) -> None:
    text = GOOD.replace("{latency: 100}", "{latncy: 100}").replace("p99_ms,", "p99,")
    message = errors_of(tmp_path, text)
    assert "did you mean 'latency'?" in message
    assert "expectations.0.metric" in message and "did you mean 'p99_ms'?" in message


def test_every_bad_fault_and_an_unknown_check_are_named(tmp_path: Path) -> None:
    text = (
        GOOD.replace("edge: gateway_to_profile", "edge: gateway_to_profil")
        .replace("service: profile-2", "service: profile-9")
        .replace("title: t", "title: t\nchecks: [no_such_check]")
    )
    message = errors_of(tmp_path, text)
    assert "did you mean 'gateway_to_profile'?" in message
    assert "variants.1.faults.0.kill" in message and "'profile-9'" in message
    assert "unknown check 'no_such_check'" in message


def test_a_misspelled_toxic_type_is_named_with_the_close_one(tmp_path: Path) -> None:
    message = errors_of(tmp_path, GOOD.replace("toxic: latency", "toxic: latncy"))
    assert "unknown toxic 'latncy'; did you mean 'latency'?" in message


def test_errors_elsewhere_than_faults_are_all_named_too(tmp_path: Path) -> None:
    text = GOOD.replace("variant: full,", "variant: ful,").replace(
        "title: t", "title: t\ndependency: profle"
    )
    message = errors_of(tmp_path, text)
    assert "unknown variant 'ful'" in message and "unknown service 'profle'" in message


def test_the_schema_toxic_types_are_the_shared_rules() -> None:
    from typing import get_args

    from grpc_resilience_mesh.chaos.experiment.model import ToxicFault

    assert get_args(ToxicFault.model_fields["toxic"].annotation) == TOXIC_NAMES
