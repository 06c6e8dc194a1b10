"""A misspelled key in an experiment file gets the close name, at the top level as in a section
or a fault (issue 46: `varients` got "Extra inputs are not permitted" and nothing more)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import ExperimentError

GOOD = """
title: t
hypothesis: h
faults:
  - {type: toxic, edge: gateway_to_profile, toxic: latency, attributes: {latency: 100}}
variants: [{name: full}]
recovery: {wait_s: 1}
expectations: [{variant: full, metric: p99_ms, max: 1000}]
"""


def refusal(tmp_path: Path, text: str) -> str:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    with pytest.raises(ExperimentError) as err:
        load_experiment(str(path))
    return str(err.value)


@pytest.mark.parametrize(
    ("good", "typo", "said"),
    [
        ("variants:", "varients:", "varients: unknown key; did you mean 'variants'?"),
        ("hypothesis:", "hypothesys:", "hypothesys: unknown key; did you mean 'hypothesis'?"),
        ("{wait_s: 1}", "{wiat_s: 1}", "recovery.wiat_s: unknown key; did you mean 'wait_s'?"),
        (
            "edge: gateway",
            "egde: gateway",
            "faults.0.toxic.egde: unknown key; did you mean 'edge'?",
        ),
    ],
)
def test_a_misspelled_key_names_the_close_one(
    tmp_path: Path, good: str, typo: str, said: str
) -> None:
    assert said in refusal(tmp_path, GOOD.replace(good, typo))


def test_a_key_like_nothing_known_keeps_the_plain_message(tmp_path: Path) -> None:
    said = refusal(tmp_path, GOOD + "zzzzqqq: 1\n")
    assert "zzzzqqq: Extra inputs are not permitted" in said
    assert "did you mean" not in said
