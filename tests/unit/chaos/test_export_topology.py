"""`mesh chaos export FILE` of a topology experiment: one Chaos Toolkit experiment whose load,
steady-state bounds, faults and expectations are the file's, run against `mesh topology up`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.export.topology import to_chaostoolkit_topology
from grpc_resilience_mesh.chaos.topology.experiment_model import FaultSpec
from grpc_resilience_mesh.chaos.topology.model import load_topology_experiment
from grpc_resilience_mesh.cli.app import app

ROOT = Path(__file__).resolve().parents[3]
SLOW_BACK = ROOT / "examples" / "chain" / "experiments" / "slow-back.yaml"
MODULE = "chaosgrpcmesh.topology"


def _funcs(activities: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(a["provider"]["module"], a["provider"]["func"]) for a in activities]


def test_the_hypothesis_is_the_files_steady_state_and_expectations() -> None:
    loaded = load_topology_experiment(SLOW_BACK)
    raw = yaml.safe_load(SLOW_BACK.read_text())
    doc = to_chaostoolkit_topology(loaded)
    steady, expectations = doc["steady-state-hypothesis"]["probes"]
    assert steady["provider"]["module"] == MODULE
    assert steady["provider"]["arguments"] == {"experiment": str(SLOW_BACK), "phase": "steady"}
    bounds = steady["tolerance"]["provider"]["arguments"]["bounds"]
    assert bounds == {"error_rate": {"max": raw["steady_state"]["max_error_rate"]}}
    got = expectations["tolerance"]["provider"]["arguments"]["expectations"]
    wanted = [
        {"phase": "fault", "metric": e["metric"], **{k: e[k] for k in ("min", "max") if k in e}}
        for e in raw["expectations"]
    ]
    assert got == wanted


def test_the_method_puts_the_files_faults_on_loads_and_takes_them_off() -> None:
    loaded = load_topology_experiment(SLOW_BACK)
    doc = to_chaostoolkit_topology(loaded)
    assert _funcs(doc["method"]) == [
        (MODULE, "apply_faults"),
        (MODULE, "run_load"),
        (MODULE, "remove_faults"),
    ]
    faults = doc["method"][0]["provider"]["arguments"]["faults"]
    assert [FaultSpec.model_validate(f) for f in faults] == loaded.experiment.faults
    assert doc["method"][1]["provider"]["arguments"]["phase"] == "fault"
    assert _funcs(doc["rollbacks"]) == [(MODULE, "remove_faults")]


def test_the_description_says_the_topology_must_be_up_first() -> None:
    doc = to_chaostoolkit_topology(load_topology_experiment(SLOW_BACK))
    topology = ROOT / "examples" / "chain" / "topology.yaml"
    assert f"`mesh topology up {topology}`" in doc["description"]
    assert doc["configuration"]["topology_state"]["key"] == "MESH_TOPOLOGY_STATE"


def test_the_cli_writes_one_file_for_a_topology_experiment(tmp_path: Path) -> None:
    done = CliRunner().invoke(
        app, ["chaos", "export", str(SLOW_BACK), "--out", str(tmp_path)], catch_exceptions=False
    )
    assert done.exit_code == 0, done.output
    (written,) = tmp_path.glob("*.json")
    assert written.name == "slow-back.json"
    assert json.loads(written.read_text()) == to_chaostoolkit_topology(
        load_topology_experiment(SLOW_BACK)
    )


def test_a_variant_asked_of_a_topology_experiment_is_bad_input(tmp_path: Path) -> None:
    args = ["chaos", "export", str(SLOW_BACK), "--out", str(tmp_path), "--variant", "full"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 2
    assert not list(tmp_path.iterdir())
