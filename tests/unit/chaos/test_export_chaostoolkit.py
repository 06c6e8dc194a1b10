"""`mesh chaos export NAME --format chaostoolkit`: each variant as a Chaos Toolkit experiment
whose probes, faults, expectations and rollbacks are the catalogue file's."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import EXPERIMENTS_DIR, ProxyDownFault
from grpc_resilience_mesh.chaos.export.chaostoolkit import NotExportable, _fault, to_chaostoolkit
from grpc_resilience_mesh.chaos.run.faults import proxies_of
from grpc_resilience_mesh.cli.app import app


def _exported(name: str, variant: str) -> dict[str, Any]:
    path, exp = load_experiment(name)
    (chosen,) = [v for v in exp.variants if v.name == variant]
    return to_chaostoolkit(path, name, exp, chosen)


def _calls(activities: list[dict[str, Any]], func: str) -> list[dict[str, Any]]:
    return [a["provider"]["arguments"] for a in activities if a["provider"]["func"] == func]


def test_the_steady_state_and_the_expectations_are_the_files() -> None:
    doc = _exported("provider-outage", "full")
    raw = yaml.safe_load((EXPERIMENTS_DIR / "provider-outage.yaml").read_text())
    steady, expectations = doc["steady-state-hypothesis"]["probes"]
    assert steady["provider"]["arguments"]["requests"] == raw["steady_state"]["load"]["requests"]
    bounds = steady["tolerance"]["provider"]["arguments"]["bounds"]
    assert bounds == {p["metric"]: {"max": p["max"]} for p in raw["steady_state"]["probes"]}
    wanted = [e for e in raw["expectations"] if e["variant"] == "full" and "traces" not in e]
    got = expectations["tolerance"]["provider"]["arguments"]["expectations"]
    assert [(e["phase"], e["metric"], e.get("min"), e.get("max")) for e in got] == [
        (e.get("phase", "fault"), e["metric"], e.get("min"), e.get("max")) for e in wanted
    ]


def test_the_toxic_goes_on_every_replica_of_the_edge_and_comes_off_in_method_and_rollback() -> None:
    doc = _exported("provider-outage", "full")
    proxies = proxies_of("recommendation_to_profile")
    assert len(proxies) == 2
    created = _calls(doc["method"], "create_toxic")
    assert [c["for_proxy"] for c in created] == proxies
    assert {(c["toxic_type"], c["attributes"]["latency"]) for c in created} == {("latency", 30000)}
    for where in (doc["method"], doc["rollbacks"]):
        deleted = _calls(where, "delete_toxic")
        assert [(d["for_proxy"], d["toxic_name"]) for d in deleted] == [
            (c["for_proxy"], c["toxic_name"]) for c in created
        ]
    assert doc["rollbacks"][-1]["provider"]["func"] == "restore_policy"
    assert all(
        a["provider"]["module"].startswith(("chaostoxi.", "chaosgrpcmesh.")) for a in doc["method"]
    )


def test_the_variant_policy_and_the_recovery_follow_the_runner() -> None:
    doc = _exported("provider-outage", "full")
    (control,) = doc["controls"]
    policy = yaml.safe_load(control["provider"]["arguments"]["policy_yaml"])
    assert policy["edges"]["gateway_to_recommendation"]["deadline"]["total_s"] == 4.0
    names = [a["name"] for a in doc["method"]]
    assert names.index("load under fault") < names.index("recovery load")
    last_off = max(i for i, n in enumerate(names) if n.startswith("fault off"))
    assert doc["method"][last_off]["pauses"] == {"after": 2.1}  # recovery.wait_s
    assert names[last_off + 1] == "probe the half-open breakers"


def test_every_catalogue_variant_exports_or_says_why_not() -> None:
    written, refused = 0, []
    for path in sorted(EXPERIMENTS_DIR.glob("*.yaml")):
        file, exp = load_experiment(path.stem)
        for variant in exp.variants:
            try:
                json.dumps(to_chaostoolkit(file, path.stem, exp, variant))
            except NotExportable as err:
                refused.append(f"{path.stem}/{variant.name}: {err}")
            else:
                written += 1
    assert written >= 20, refused
    assert any("scenario" in r for r in refused)


def test_a_fault_on_a_schedule_is_refused_with_its_reason() -> None:
    path, exp = load_experiment("flapping-dependency")
    with pytest.raises(NotExportable, match=r"flaps|schedule"):
        to_chaostoolkit(path, "flapping-dependency", exp, exp.variants[0])


def test_a_variant_under_xds_is_refused_not_exported_without_xds() -> None:
    path, exp = load_experiment("provider-outage")
    (native,) = [v for v in exp.variants if v.xds]
    with pytest.raises(NotExportable, match=r"under xDS .*`mesh up --xds`"):
        to_chaostoolkit(path, "provider-outage", exp, native)
    for file in sorted(EXPERIMENTS_DIR.glob("*.yaml")):
        found, each = load_experiment(file.stem)
        for variant in (v for v in each.variants if v.xds and each.scenario is None):
            with pytest.raises(NotExportable, match="mesh up --xds"):
                to_chaostoolkit(found, file.stem, each, variant)


def test_the_command_writes_one_file_per_variant(tmp_path: Path) -> None:
    done = CliRunner().invoke(
        app,
        ["chaos", "export", "provider-outage", "--format", "chaostoolkit", "--out", str(tmp_path)],
    )
    assert done.exit_code == 0, done.output
    _, exp = load_experiment("provider-outage")
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted(
        f"provider-outage.{v.name}.json" for v in exp.variants if not v.xds
    )
    assert "skipped provider-outage/xds-native: it runs under xDS" in done.output
    wrong = CliRunner().invoke(app, ["chaos", "export", "provider-outage", "--variant", "nope"])
    assert wrong.exit_code == 2 and "no variant nope" in wrong.output
    scenario = CliRunner().invoke(app, ["chaos", "export", "criticality", "--out", str(tmp_path)])
    assert scenario.exit_code == 1 and "skipped criticality/" in scenario.output


def test_an_expectation_the_extension_cannot_measure_is_listed_not_checked() -> None:
    doc = _exported("slow-replica", "ejection")  # its check counts ejections from the spans
    not_checked = doc["extensions"][0]["not_checked"]
    assert "fault/ejections: measured by `mesh chaos run` only" in not_checked
    due = doc["steady-state-hypothesis"]["probes"][1]["tolerance"]["provider"]["arguments"]
    assert "ejections" not in {e["metric"] for e in due["expectations"]}
    assert _exported("provider-outage", "full")["extensions"][0]["not_checked"] == [
        "fault/traces_broken.max_attempts_per_request: measured by `mesh chaos run` only",
        "fault/traces_broken.breaker_open_then_fallback: measured by `mesh chaos run` only",
    ]  # its `traces:` rules read the spans, which the extension's probes never see


EXTENSION = Path(__file__).resolve().parents[3] / "integrations" / "chaosmesh"


def _signatures(module: str) -> dict[str, set[str]]:
    """The extension's functions in `module` and their parameters, read from its source (the
    extension imports chaostoolkit-lib, which only Chaos Toolkit's venv has)."""
    tree = ast.parse((EXTENSION / (module.replace(".", "/") + ".py")).read_text())
    return {
        f.name: {a.arg for a in f.args.args + f.args.kwonlyargs}
        for f in tree.body
        if isinstance(f, ast.FunctionDef)
    }


def test_every_exported_activity_is_the_extensions_own_so_it_sends_the_mesh_token() -> None:
    """chaostoxi sends no token: with admin auth on (mesh up's default) each of its toxics was
    refused and the run reported a weakness under faults never applied."""
    seen: set[tuple[str, str]] = set()
    for path in sorted(EXPERIMENTS_DIR.glob("*.yaml")):
        file, exp = load_experiment(path.stem)
        for variant in exp.variants:
            try:
                doc = to_chaostoolkit(file, path.stem, exp, variant)
            except NotExportable:
                continue
            assert "toxiproxy_url" not in doc["configuration"], "chaostoxi's setting, unused"
            for activity in doc["method"] + doc["rollbacks"]:
                provider = activity["provider"]
                module, func = provider["module"], provider["func"]
                assert module.startswith("chaosgrpcmesh."), activity["name"]
                params = _signatures(module).get(func)
                assert params is not None, f"{module}.{func} is not in the extension"
                assert set(provider["arguments"]) <= params, f"{module}.{func}"
                seen.add((module, func))
    down = ProxyDownFault(type="proxy_down", edge="gateway_to_payment")
    for on in (True, False):  # no catalogue variant that exports takes a proxy down
        for activity in _fault(0, down, on):
            provider = activity["provider"]
            assert set(provider["arguments"]) <= _signatures(provider["module"])[provider["func"]]
            seen.add((provider["module"], provider["func"]))
    toxiproxy = {f for m, f in seen if m == "chaosgrpcmesh.toxiproxy"}
    assert toxiproxy == {"create_toxic", "delete_toxic", "disable_proxy", "enable_proxy"}
