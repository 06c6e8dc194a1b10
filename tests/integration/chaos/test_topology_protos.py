"""A topology experiment whose load names its messages by .proto files (`protos`, `proto_path`,
relative to the experiment file): checked with the file's other fields, compiled before any
load, and refused, naming the key, when it says two things at once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.topology.model import load_topology_experiment
from grpc_resilience_mesh.chaos.topology.phases import prepare

ROOT = Path(__file__).resolve().parents[3]
EXPERIMENT = """
title: kv by its proto
topology: {topology}
load:
  method: /kvexample.v1.KeyValue/Put
  request: {{key: "k-{{n}}", value: v}}
  requests: 8
{source}
"""


def experiment(tmp_path: Path, source: str) -> Path:
    (tmp_path / "protos").mkdir(exist_ok=True)
    shutil.copy(ROOT / "examples" / "kv" / "kv.proto", tmp_path / "protos" / "kv.proto")
    path = tmp_path / "exp.yaml"
    topology = ROOT / "examples" / "kv" / "topology.yaml"
    path.write_text(EXPERIMENT.format(topology=topology, source=source))
    return path


async def test_protos_relative_to_the_experiment_give_the_load_its_messages(
    tmp_path: Path,
) -> None:
    loaded = load_topology_experiment(experiment(tmp_path, "  protos: [protos/kv.proto]"))
    prepared = await prepare(loaded.experiment.load, "127.0.0.1:1", 3, "run-1", tmp_path)
    assert prepared.info.full_name == "/kvexample.v1.KeyValue/Put"
    assert [m.key for m, _ in prepared.calls] == [f"k-{i}" for i in range(8)]
    assert len(prepared.steady_calls) == 3


@pytest.mark.parametrize(
    ("source", "said"),
    [
        (
            "  protos: [protos/kv.proto]\n  descriptor_set: kv.binpb",
            "load: give descriptor_set or protos, not both",
        ),
        ("  proto_path: [protos]", "load: proto_path without protos"),
        ("  protoz: [protos/kv.proto]", "load.protoz: unknown key; did you mean 'protos'?"),
    ],
    ids=["both", "include path alone", "misspelt"],
)
def test_a_load_that_says_two_things_at_once_is_refused(
    tmp_path: Path, source: str, said: str
) -> None:
    with pytest.raises(ExperimentError) as error:
        load_topology_experiment(experiment(tmp_path, source))
    assert said in str(error.value)
