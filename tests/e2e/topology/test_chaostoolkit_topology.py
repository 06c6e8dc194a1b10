"""An exported topology experiment under the real Chaos Toolkit (`chaos run` from .peers/ctk)
against examples/chain held up by `mesh topology up`, as a user runs the two: the journal's
status, the fault's figure, and the rollbacks leaving every proxy without a toxic."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.chaos.topology.held import HeldState, read_state
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from grpc_resilience_mesh.launch.polling import poll_until
from tools import ctk_venv

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[3]
MESH = [sys.executable, "-m", "grpc_resilience_mesh.cli"]
CHAIN = ROOT / "examples" / "chain"


@pytest.fixture(scope="module")
def chaos_bin() -> Path:
    try:
        return ctk_venv.ensure()
    except RuntimeError as err:
        pytest.skip(f"Chaos Toolkit could not be installed: {err}")


@pytest.fixture(scope="module")
def chain_up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, HeldState]]:
    """`mesh topology up examples/chain/topology.yaml`, stopped by its PID (SIGINT) at the
    end: its state file, and every service it started gone with it."""
    where = tmp_path_factory.mktemp("held")
    state_path = where / "topology.json"
    with open(where / "up.log", "wb") as log:
        up = subprocess.Popen(
            [*MESH, "topology", "up", str(CHAIN / "topology.yaml"), "--state", str(state_path)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        ready = poll_until(lambda: state_path.exists() or up.poll() is not None, 60)
        assert ready and up.poll() is None, (where / "up.log").read_text()
        state = read_state(state_path)
        yield state_path, state
    finally:
        up.send_signal(signal.SIGINT)
        up.wait(timeout=30)
    assert not state_path.exists()
    assert poll_until(lambda: not any(_alive(pid) for pid in state.pids.values()), 10)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _toxics(state: HeldState) -> dict[str, list[str]]:
    client = ToxiproxyClient(state.toxiproxy, token=state.token)
    return {edge: [t["name"] for t in client.toxics(edge)] for edge in state.wiring.proxies}


def exported(experiment: Path, out: Path) -> dict[str, Any]:
    done = subprocess.run(
        [*MESH, "chaos", "export", str(experiment), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads((out / f"{experiment.stem}.json").read_text()))


def ctk_run(chaos: Path, state_path: Path, doc: dict[str, Any], where: Path) -> dict[str, Any]:
    """`chaos run` of `doc` with MESH_TOPOLOGY_STATE pointing at the held topology: its journal."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "experiment.json").write_text(json.dumps(doc))
    argv = ["--log-file", "ctk.log", "run", "--journal-path", "journal.json", "experiment.json"]
    subprocess.run(
        [str(chaos), *argv],
        cwd=where,
        env={**os.environ, "MESH_TOPOLOGY_STATE": str(state_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return dict(json.loads((where / "journal.json").read_text()))


def outputs(journal: dict[str, Any]) -> dict[str, Any]:
    return {r["activity"]["name"]: r.get("output") for r in journal["run"]}


def test_an_exported_topology_experiment_holds_under_chaos_toolkit(
    chaos_bin: Path, chain_up: tuple[Path, HeldState], tmp_path: Path
) -> None:
    state_path, state = chain_up
    doc = exported(CHAIN / "experiments" / "slow-back.yaml", tmp_path)
    journal = ctk_run(chaos_bin, state_path, doc, tmp_path / "ctk")
    assert (journal["status"], journal["deviated"]) == ("completed", False)
    assert journal["steady_states"]["before"]["steady_state_met"] is True
    assert journal["steady_states"]["after"]["steady_state_met"] is True
    fault = outputs(journal)["load under fault"]
    assert fault["requests"] == 200 and fault["error_rate"] == 0.0
    assert fault["p50_s"] >= 0.2, "the 200 ms latency toxic was on the path"
    assert {r["status"] for r in journal["rollbacks"]} == {"succeeded"}
    assert _toxics(state) == {edge: [] for edge in state.wiring.proxies}


def test_the_rollbacks_remove_a_toxic_the_method_left_on(
    chaos_bin: Path, chain_up: tuple[Path, HeldState], tmp_path: Path
) -> None:
    """Without the method's own `faults off`, and with an expectation it cannot meet (a median
    under the toxic's 200 ms): the run deviates, and the rollbacks alone take the toxic off."""
    state_path, state = chain_up
    doc = exported(CHAIN / "experiments" / "slow-back.yaml", tmp_path)
    doc["method"] = [a for a in doc["method"] if a["name"] != "faults off"]
    met = doc["steady-state-hypothesis"]["probes"][1]["tolerance"]["provider"]
    met["arguments"]["expectations"] = [{"phase": "fault", "metric": "p50_s", "max": 0.1}]
    journal = ctk_run(chaos_bin, state_path, doc, tmp_path / "ctk")
    assert (journal["status"], journal["deviated"]) == ("completed", True)
    assert outputs(journal)["load under fault"]["p50_s"] >= 0.2
    (rollback,) = journal["rollbacks"]
    assert rollback["status"] == "succeeded"
    assert rollback["output"] == {edge: [] for edge in state.wiring.proxies}
    assert _toxics(state) == {edge: [] for edge in state.wiring.proxies}


def test_a_chaos_run_killed_mid_fault_leaves_no_toxic_past_its_lease(
    chaos_bin: Path, chain_up: tuple[Path, HeldState], tmp_path: Path
) -> None:
    """The faults go on under the runner's lease: `chaos run` killed with SIGKILL while the
    toxic is on, the held Toxiproxy drops it within 5 s (the lease's 3 s, and its renewals')."""
    state_path, state = chain_up
    doc = exported(CHAIN / "experiments" / "slow-back.yaml", tmp_path)
    (tmp_path / "experiment.json").write_text(json.dumps(doc))
    chaos = subprocess.Popen(
        [str(chaos_bin), "run", "--journal-path", "journal.json", "experiment.json"],
        cwd=tmp_path,
        env={**os.environ, "MESH_TOPOLOGY_STATE": str(state_path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        on = poll_until(lambda: any(_toxics(state).values()) or chaos.poll() is not None, 60)
        assert on and chaos.poll() is None, "the toxic never went on"
    finally:
        chaos.kill()
        chaos.wait(timeout=10)
    assert poll_until(lambda: not any(_toxics(state).values()), 5.0), _toxics(state)


def test_the_guard_ends_the_chaos_toolkit_run_with_the_faults_off(
    chaos_bin: Path, chain_up: tuple[Path, HeldState], tmp_path: Path
) -> None:
    """Last in this file: right after it, the chain still fails fast for a while (a steady
    state run then saw 50 of 50 calls UNAVAILABLE in about 2 ms each)."""
    state_path, state = chain_up
    doc = exported(CHAIN / "experiments" / "guard-trips.yaml", tmp_path)
    journal = ctk_run(chaos_bin, state_path, doc, tmp_path / "ctk")
    assert journal["status"] == "interrupted"
    assert "aborted by guard: error_rate" in (tmp_path / "ctk" / "ctk.log").read_text()
    assert _toxics(state) == {edge: [] for edge in state.wiring.proxies}
