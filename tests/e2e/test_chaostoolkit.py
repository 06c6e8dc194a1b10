"""The real Chaos Toolkit (`chaos run`, `chaos report`) against `mesh up`, both ways: an
exported catalogue experiment runs under it and its journal agrees with our own run of the
same experiment, and the journal `mesh chaos run` writes is one `chaos report` renders.

Chaos Toolkit lives in a venv of its own (tools/ctk_venv.py: .peers/ctk, made once, about
1.5 min); where it cannot be installed, these tests skip with pip's reason. The mesh runs as
`mesh up` starts it, admin auth on: the extension sends the token mesh.json holds."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from grpc_resilience_mesh.chaos.experiment.model import EXPERIMENTS_DIR
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from grpc_resilience_mesh.loadgen.in_process import LoadGenerator
from grpc_resilience_mesh.loadgen.plans import plan_for
from tests.e2e.mesh_up_process import MeshUp, running_mesh_up
from tests.support.peers import peer_binary
from tools import ctk_venv

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def chaos_bin() -> Path:
    try:
        return ctk_venv.ensure()
    except RuntimeError as err:
        pytest.skip(f"Chaos Toolkit could not be installed: {err}")


@pytest.fixture(scope="module")
def mesh_with_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MeshUp]:
    """`mesh up --auto-ports` as a user starts it (admin auth on), warmed as `mesh chaos run`
    warms a mesh before its first variant (its capacity probe): the first calls of a mesh just
    started open channels and, on a busy machine, can miss deadlines."""
    state_dir = tmp_path_factory.mktemp("ctk") / "var"
    env = {k: v for k, v in os.environ.items() if k not in ("MESH_ADMIN_AUTH", "MESH_ADMIN_TOKEN")}
    with running_mesh_up(state_dir, env=env) as running:
        assert running.state["admin_token"], "admin auth is on"
        asyncio.run(warm(running.state["gateway"], running.state.get("api_key")))
        yield running


async def warm(gateway: str, api_key: str | None) -> None:
    generator = LoadGenerator()
    try:
        plan = plan_for(gateway, 300, ["home"], concurrency=16, timeout_s=5, api_key=api_key)
        await generator.run(plan)
    finally:
        await generator.close()


def one_variant(tmp_path: Path, name: str, variant: str) -> Path:
    """The catalogue experiment `name` with only `variant` and its expectations on counts:
    its latency bounds (p50_vs_steady, total_ms, ...) are timing on a shared machine, and
    two runs judged by them could disagree for that alone."""
    doc = yaml.safe_load((EXPERIMENTS_DIR / f"{name}.yaml").read_text())
    for key in ("variants", "expectations", "reference"):
        doc[key] = [d for d in doc.get(key, []) if d.get("name", d.get("variant")) == variant]
    doc["demo_variants"] = [d for d in doc.get("demo_variants", []) if d == variant]
    doc["expectations"] = [  # a `traces:` expectation is ours alone: listed, never checked
        e
        for e in doc["expectations"]
        if "metric" in e and not e["metric"].endswith(("_ms", "_vs_steady"))
    ]
    assert doc["expectations"], f"{name}/{variant} has no expectation on counts"
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def ctk_run(
    chaos: Path,
    mesh: MeshUp,
    experiment: dict[str, Any],
    where: Path,
    state_file: Path | None = None,
) -> tuple[int, dict[str, Any], str]:
    """`chaos run` of `experiment` against `mesh` (as `state_file` describes it, else its own
    mesh.json): its exit code, journal and log file."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "experiment.json").write_text(json.dumps(experiment))
    env = {
        **os.environ,
        "MESH_STATE_FILE": str(state_file or mesh.state_dir / "mesh.json"),
        "TOXIPROXY_URL": mesh.state["toxiproxy"],
    }
    done = subprocess.run(
        [
            str(chaos),
            "--log-file",
            "ctk.log",
            "run",
            "--journal-path",
            "journal.json",
            "experiment.json",
        ],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    journal = json.loads((where / "journal.json").read_text())
    return done.returncode, journal, (where / "ctk.log").read_text()


def export(mesh: MeshUp, yaml_path: Path, out: Path) -> dict[str, Any]:
    done = mesh.mesh(
        "chaos", "export", str(yaml_path), "--format", "chaostoolkit", "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    (written,) = out.glob("*.json")
    return dict(json.loads(written.read_text()))


def outputs(journal: dict[str, Any]) -> dict[str, Any]:
    return {r["activity"]["name"]: r["output"] for r in journal["run"]}


COUNTS = ("requests", "ok", "errors", "degraded", "personalised")


def test_an_exported_provider_outage_runs_under_chaos_toolkit_as_ours_does(
    chaos_bin: Path, mesh_with_token: MeshUp, tmp_path: Path
) -> None:
    yaml_path = one_variant(tmp_path, "provider-outage", "full")
    ours = mesh_with_token.mesh(
        "chaos",
        "run",
        str(yaml_path),
        "--target",
        str(mesh_with_token.state_dir / "mesh.json"),
        "--reports",
        str(tmp_path / "reports"),
        timeout_s=300,
    )
    assert ours.returncode == 0, ours.stdout[-2000:]
    experiment = export(mesh_with_token, yaml_path, tmp_path / "exported")
    code, journal, _ = ctk_run(chaos_bin, mesh_with_token, experiment, tmp_path / "ctk")
    assert code == 0, journal["status"]
    assert (journal["status"], journal["deviated"]) == ("completed", False)
    assert journal["steady_states"]["before"]["steady_state_met"] is True
    assert journal["steady_states"]["after"]["steady_state_met"] is True
    assert len(journal["rollbacks"]) == len(experiment["rollbacks"])
    assert {r["status"] for r in journal["rollbacks"]} == {"succeeded"}
    folder = tmp_path / "reports" / "provider-outage"
    (variant,) = json.loads((folder / "result.json").read_text())["variants"]
    before = journal["steady_states"]["before"]["probes"][0]["output"]
    after = journal["steady_states"]["after"]["probes"][0]["output"]
    for metric in (*COUNTS, "error_rate", "degraded_rate"):
        assert before[metric] == variant["steady_before"][metric], metric
        assert after[metric] == variant["steady_after"][metric], metric
    runs = outputs(journal)
    for phase, title in (("fault", "load under fault"), ("recovery", "recovery load")):
        for metric in COUNTS:
            assert runs[title][metric] == variant["phases"][phase]["metrics"][metric], metric
    # The breaker bounds the calls to the provider in both runs: C + T - 1 = 14 at most.
    for calls in (runs["load under fault"], variant["phases"]["fault"]["metrics"]):
        assert 10 <= calls["dependency_calls"] <= 14

    ours_journal = json.loads((folder / "journal.json").read_text())
    assert (ours_journal["status"], ours_journal["deviated"]) == ("completed", False)
    report = tmp_path / "ours.html"
    rendered = subprocess.run(
        [
            str(chaos_bin),
            "report",
            "--export-format=html",
            str(folder / "journal.json"),
            str(report),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rendered.returncode == 0, rendered.stderr
    assert "full/fault dependency_calls" in report.read_text()


def test_a_missed_expectation_deviates_and_every_rollback_still_runs(
    chaos_bin: Path, mesh_with_token: MeshUp, tmp_path: Path
) -> None:
    experiment = export(mesh_with_token, one_variant(tmp_path, "provider-outage", "full"), tmp_path)
    met = experiment["steady-state-hypothesis"]["probes"][1]["tolerance"]["provider"]
    met["arguments"]["expectations"] = [{"phase": "fault", "metric": "personalised", "min": 1}]
    # Without the recovery load, but with the half-open probe: it closes the breakers the fault
    # opened, so the steady state after holds and the deviation is the expectation's alone (with
    # the probe left out too, an open breaker degraded 2% of the steady load under a busy CI).
    kept = ("recovery load", "the gateway's breakers after recovery")
    experiment["method"] = [a for a in experiment["method"] if a["name"] not in kept]
    code, journal, log = ctk_run(chaos_bin, mesh_with_token, experiment, tmp_path / "ctk")
    assert journal["steady_states"]["before"]["steady_state_met"] is True
    assert code == 1 and journal["deviated"] is True
    assert journal["steady_states"]["after"]["probes"][0]["tolerance_met"] is True
    said = [line[-200:] for line in log.splitlines() if "missed" in line or "ERROR" in line]
    assert "expectation missed: fault/personalised=0 (want >= 1)" in log, said
    assert [r["status"] for r in journal["rollbacks"]] == ["succeeded"] * len(
        experiment["rollbacks"]
    )
    assert no_toxics(mesh_with_token)


def test_the_exported_experiment_runs_against_real_toxiproxy_which_needs_no_token(
    chaos_bin: Path, tmp_path: Path
) -> None:
    server = peer_binary("toxiproxy-server")
    with running_mesh_up(tmp_path / "var", "--toxiproxy", "real", "--no-console") as real:
        assert Path(f"/proc/{real.state['pids']['toxiproxy']}/exe").resolve() == server.resolve()
        asyncio.run(warm(real.state["gateway"], real.state.get("api_key")))
        experiment = export(real, one_variant(tmp_path, "provider-outage", "full"), tmp_path / "x")
        code, journal, _ = ctk_run(chaos_bin, real, experiment, tmp_path / "ctk")
    assert (code, journal["status"], journal["deviated"]) == (0, "completed", False)
    under_fault = outputs(journal)["load under fault"]
    assert under_fault["degraded"] == under_fault["requests"] > 0, "the toxic took"
    assert [r["status"] for r in journal["rollbacks"]] == ["succeeded"] * len(
        experiment["rollbacks"]
    )


def no_toxics(mesh: MeshUp) -> bool:
    """Every proxy of `mesh` is there, enabled and without a toxic."""
    proxies = ToxiproxyClient(mesh.state["toxiproxy"], token=mesh.state["admin_token"]).proxies()
    return bool(proxies) and all(p["toxics"] == [] and p["enabled"] for p in proxies.values())


def test_a_token_that_is_not_the_meshs_stops_the_run_it_never_deviates(
    chaos_bin: Path, mesh_with_token: MeshUp, tmp_path: Path
) -> None:
    """Faults that were never applied are not a finding: the policy swap and the first toxic
    refused stop the run (interrupted, exit 1, the reason logged), not `deviated`."""
    experiment = export(mesh_with_token, one_variant(tmp_path, "provider-outage", "full"), tmp_path)
    stale = {**mesh_with_token.saved_state(), "admin_token": "an-earlier-runs-token"}
    state_file = tmp_path / "stale-mesh.json"
    state_file.write_text(json.dumps(stale))
    without_control = {k: v for k, v in experiment.items() if k != "controls"}
    for name, doc in (("policy", experiment), ("toxic", without_control)):
        code, journal, log = ctk_run(chaos_bin, mesh_with_token, doc, tmp_path / name, state_file)
        assert (code, journal["status"], journal["deviated"]) == (1, "interrupted", False), name
        assert "not applied, run stopped" in log and "is not the running mesh's" in log, name
        assert str(state_file) in log, name
    assert "toxic exp0_latency_downstream on" in log  # the second run got as far as the toxic
    assert journal["steady_states"]["before"]["steady_state_met"] is True
    assert no_toxics(mesh_with_token)


def _create_proxy(module: str, name: str, upstream: list[str], **more: Any) -> dict[str, Any]:
    arguments = {
        "proxy_name": name,
        "upstream_host": upstream[0],
        "upstream_port": int(upstream[1]),
    }
    provider = {"type": "python", "module": module, "func": "create_proxy"}
    return {
        "type": "action",
        "name": f"{module} create_proxy {name}",
        "provider": {**provider, "arguments": {**arguments, **more}},
    }


def test_create_proxy_sends_the_token_listens_on_loopback_and_says_how_to_fix_it(
    chaos_bin: Path, mesh_with_token: MeshUp, tmp_path: Path
) -> None:
    upstream = mesh_with_token.state["services"]["profile"]["listen"].rsplit(":", 1)
    remove = {"type": "python", "module": "chaosgrpcmesh.toxiproxy", "func": "delete_proxy"}
    experiment = {
        "version": "1.0.0",
        "title": "a proxy of our own",
        "description": "chaostoxi's (no token), ours on every interface, ours by default",
        "configuration": {"toxiproxy_url": {"type": "env", "key": "TOXIPROXY_URL"}},
        "method": [
            _create_proxy("chaostoxi.proxy.actions", "theirs", upstream),
            _create_proxy("chaosgrpcmesh.toxiproxy", "wide", upstream, listen_host="0.0.0.0"),
            _create_proxy("chaosgrpcmesh.toxiproxy", "ours", upstream),
        ],
        "rollbacks": [
            {
                "type": "action",
                "name": "remove ours",
                "provider": {**remove, "arguments": {"proxy_name": "ours"}},
            }
        ],
    }
    _, journal, log = ctk_run(chaos_bin, mesh_with_token, experiment, tmp_path / "ctk")
    theirs, wide, ours = journal["run"]
    assert theirs["status"] == "failed"
    assert "response code 401" in log  # chaostoxi sends no token
    assert wide["status"] == "failed"
    assert "unless given listen_host: 127.0.0.1" in log  # the server's 400, in our error
    assert ours["status"] == "succeeded", ours
    assert ours["output"]["listen"].startswith("127.0.0.1:")
    assert [r["status"] for r in journal["rollbacks"]] == ["succeeded"]
    client = ToxiproxyClient(
        mesh_with_token.state["toxiproxy"], token=mesh_with_token.state["admin_token"]
    )
    assert not {"theirs", "wide", "ours"} & set(client.proxies())


def _probe(title: str, func: str, **arguments: Any) -> dict[str, Any]:
    provider = {"type": "python", "module": "chaosgrpcmesh.probes", "func": func}
    return {"type": "probe", "name": title, "provider": {**provider, "arguments": arguments}}


def test_the_extension_reads_health_counters_and_replicas_of_the_mesh(
    chaos_bin: Path, mesh_with_token: MeshUp, tmp_path: Path
) -> None:
    experiment = {
        "version": "1.0.0",
        "title": "the mesh as the extension sees it",
        "description": "health, /metrics and the replicas, read through chaosgrpcmesh.probes",
        "method": [
            _probe("health", "grpc_health"),
            _probe("home calls", "counters", name="mesh_server_calls_total", service="gateway"),
            _probe("ejected", "ejection_state"),
            _probe("breakers", "breaker_state"),
        ],
    }
    _, journal, _ = ctk_run(chaos_bin, mesh_with_token, experiment, tmp_path / "ctk")
    assert [r["status"] for r in journal["run"]] == ["succeeded"] * 4, journal["run"]
    health, calls, ejected, breakers = (r["output"] for r in journal["run"])
    assert health == {name: "SERVING" for name in mesh_with_token.state["services"]}
    assert calls >= 300  # the warm-up's homes, at least, went through the gateway
    assert set(ejected.values()) <= {0.0}  # nothing is slow: no replica kept out
    assert breakers["not_closed"] == 0
