"""Experiment files: every catalogue entry loads; bad files name the file, the key and why."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from grpc_resilience_mesh.chaos.experiment.loading import catalogue, load_experiment
from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.experiment.variant_policy import materialise_policy
from grpc_resilience_mesh.embedded_toxiproxy.toxics import TOXIC_TYPES
from grpc_resilience_mesh.services.policy.loading import load_policy

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


def alias_bomb(levels: int = 9) -> str:
    """Under 1 KB of nested aliases that stand for 10**levels nodes."""
    lines = ["title: t", "hypothesis: h", "x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    lines.append(f"variants: [{{name: full, overrides: {{edges: *a{levels - 1}}}}}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_once_naming_the_file(tmp_path: Path) -> None:
    text = alias_bomb()
    assert len(text) < 1000
    path = write(tmp_path, text)
    started = time.perf_counter()
    with pytest.raises(ExperimentError) as info:
        load_experiment(path)
    assert time.perf_counter() - started < 1.0  # was 52 s of CPU; measured about 5 ms
    assert str(info.value).startswith(f"{path}: ")
    assert "aliases" in str(info.value)


def test_deep_nesting_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "title: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ExperimentError, match="nesting deeper") as info:
        load_experiment(path)
    assert str(info.value).startswith(f"{path}: line 1")


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("title: t", "title: t\nsecret-token: [abc"))
    with pytest.raises(ExperimentError) as info:
        load_experiment(path)
    message = str(info.value)
    assert message.startswith(f"{path}: not valid YAML: line ")
    assert "<unicode string>" not in message
    assert "abc" not in message


@pytest.mark.parametrize(
    ("metric", "words"),
    [
        ("p99", "unknown metric 'p99'; did you mean 'p99_ms'?"),
        ("code.UNAVAILABE", "did you mean 'code.UNAVAILABLE'?"),
        ("calls.Popularr", "did you mean 'calls.Popular'?"),
        ("lost", "comes from the check ledger, which `checks:` does not name"),
        ("offered_per_s", "only when the load is open loop"),
        ("breakers_not_closed", "recovery phase only"),
        ("checkout_ok_rate", "not in this phase's load"),
    ],
)
def test_a_metric_nothing_measures_is_refused(tmp_path: Path, metric: str, words: str) -> None:
    text = GOOD.replace("metric: ok, min: 10", f"metric: {metric}, min: 10")
    with pytest.raises(ExperimentError) as info:
        load_experiment(write(tmp_path, text))
    assert "expectations.0.metric" in str(info.value)
    assert words in str(info.value)


@pytest.mark.parametrize(
    "metric",
    ["p99_ms", "code.UNAVAILABLE", "calls.Recommend", "home_p99_vs_steady", "settle_s"],
)
def test_a_metric_the_fault_phase_measures_is_accepted(tmp_path: Path, metric: str) -> None:
    text = GOOD.replace("metric: ok, min: 10", f"metric: {metric}, min: 0")
    load_experiment(write(tmp_path, text))


def test_metrics_of_named_checks_and_the_recovery_phase(tmp_path: Path) -> None:
    text = GOOD.replace("variants:", "checks: [ledger]\nrecovery: {wait_s: 0}\nvariants:")
    text += (
        "  - {variant: full, metric: lost, max: 0}\n"
        "  - {variant: full, phase: recovery, metric: breakers_not_closed, max: 0}\n"
    )
    text = text.replace("expectations: [{variant: full, metric: ok, min: 10}]", "expectations:")
    _, exp = load_experiment(write(tmp_path, text))
    assert [e.metric for e in exp.expectations] == ["lost", "breakers_not_closed"]
    bad = text.replace(
        "phase: recovery, metric: breakers_not_closed", "metric: breakers_not_closed"
    )
    with pytest.raises(ExperimentError, match="recovery phase only"):
        load_experiment(write(tmp_path, bad))
    with pytest.raises(ExperimentError, match="no recovery phase"):
        load_experiment(write(tmp_path, text.replace("recovery: {wait_s: 0}\n", "")))


def test_a_scenario_experiment_names_only_its_scenario_metrics(tmp_path: Path) -> None:
    text = """
title: t
hypothesis: h
scenario: duplicate-enqueue
variants: [{name: same}]
columns: [runs, receipts]
expectations: [{variant: same, metric: recepits, max: 1}]
"""
    with pytest.raises(ExperimentError, match="did you mean 'receipts'") as info:
        load_experiment(write(tmp_path, text))
    assert "scenario duplicate-enqueue measures" in str(info.value)
    with pytest.raises(ExperimentError, match="columns: unknown metric 'p99_ms'"):
        load_experiment(
            write(tmp_path, text.replace("recepits", "receipts").replace("runs,", "p99_ms,"))
        )


@pytest.mark.parametrize("toxic", sorted(set(TOXIC_TYPES) - {"noop"}))
def test_every_attribute_of_every_toxic_is_accepted(tmp_path: Path, toxic: str) -> None:
    attrs = ", ".join(f"{name}: 1" for name in TOXIC_TYPES[toxic].attribute_names)
    text = GOOD.replace(
        "toxic: latency, attributes: {latency: 100}", f"toxic: {toxic}, attributes: {{{attrs}}}"
    )
    _, exp = load_experiment(write(tmp_path, text))
    assert set(exp.faults[0].attributes) == set(TOXIC_TYPES[toxic].attribute_names)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("toxic", "attribute", "words"),
    [
        ("latency", "latncy", "a latency toxic has latency, jitter; did you mean 'latency'?"),
        ("bandwidth", "rtae", "a bandwidth toxic has rate"),
        ("slow_close", "latency", "a slow_close toxic has delay"),
        ("slicer", "average", "did you mean 'average_size'?"),
    ],
)
def test_a_misspelled_toxic_attribute_is_refused(
    tmp_path: Path, toxic: str, attribute: str, words: str
) -> None:
    text = GOOD.replace(
        "toxic: latency, attributes: {latency: 100}",
        f"toxic: {toxic}, attributes: {{{attribute}: 100}}",
    )
    with pytest.raises(ExperimentError, match=f"attributes.{attribute}") as info:
        load_experiment(write(tmp_path, text))
    assert words in str(info.value)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (("metric: ok", "metric: ok}]\nx: [{"), "x"),
        (("title: t", "title: t\ndependency: moon"), "unknown service 'moon'"),
        (("title: t", "title: t\ndependency_method: Recomend"), "did you mean 'Recommend'?"),
    ],
)
def test_services_and_methods_exist_in_the_topology(
    tmp_path: Path, change: tuple[str, str], words: str
) -> None:
    with pytest.raises(ExperimentError, match=words):
        load_experiment(write(tmp_path, GOOD.replace(*change)))


@pytest.mark.parametrize(
    ("method", "ok"),
    [
        ("GetProfile", True),
        ("/mesh.v1.ProfileService/GetProfile", True),
        ("*", True),
        ("GetProfil", False),
        ("/mesh.v1.PaymentService/Charge", False),
    ],
)
def test_app_fault_methods_are_the_services(tmp_path: Path, method: str, ok: bool) -> None:
    text = GOOD.replace(
        "  - {type: toxic, edge: gateway_to_profile, toxic: latency, attributes: {latency: 100}}",
        f"  - {{type: app_fault, service: profile, method: '{method}'}}",
    )
    if ok:
        load_experiment(write(tmp_path, text))
    else:
        with pytest.raises(ExperimentError, match="profile serves"):
            load_experiment(write(tmp_path, text))


def test_a_misspelled_preset_is_refused_at_load(tmp_path: Path) -> None:
    text = GOOD.replace("variants: [{name: full}]", "variants: [{name: full, policy: ful}]")
    with pytest.raises(ExperimentError) as info:
        load_experiment(write(tmp_path, text))
    assert "variants.full.policy: 'ful' is neither a preset" in str(info.value)
    assert "did you mean 'full'?" in str(info.value)


SECRET = "root:$6$hunter2hunter2:19000:0:99999:7:::\n"


def policy_experiment(folder: Path, policy: str, overrides: str = "{}") -> str:
    folder.mkdir(parents=True, exist_ok=True)
    text = GOOD.replace(
        "variants: [{name: full}]",
        f"variants: [{{name: full, policy: '{policy}', overrides: {overrides}}}]",
    )
    return write(folder, text)


@pytest.mark.parametrize(
    "name", ["../outside.yaml", "../../outside.yaml", "link.yaml", "{outside}", "../outside"]
)
def test_a_policy_outside_the_experiments_folder_is_refused_unread(
    tmp_path: Path, name: str
) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text(SECRET)
    (tmp_path / "outside").write_text(SECRET)
    folder = tmp_path / "exps" / "mine"
    folder.mkdir(parents=True)
    (folder / "link.yaml").symlink_to(outside)
    path = policy_experiment(folder, name.replace("{outside}", str(outside)))
    with pytest.raises(ExperimentError) as info:
        load_experiment(path)
    assert "variants.full.policy" in str(info.value)
    assert "hunter2" not in str(info.value) and "99999" not in str(info.value)


def test_a_policy_file_that_does_not_parse_is_named_not_quoted(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("edge_defaults:\n  token: [hunter2\n")
    with pytest.raises(ExperimentError) as info:
        load_experiment(policy_experiment(tmp_path, "broken.yaml"))
    assert f"{tmp_path / 'broken.yaml'}: not valid YAML: line 3" in str(info.value)
    assert "hunter2" not in str(info.value)


def test_a_policy_file_that_is_not_a_policy_names_keys_not_values(tmp_path: Path) -> None:
    (tmp_path / "odd.yaml").write_text("edge_defaults: {retry: {max_attempts: hunter2}}\n")
    with pytest.raises(ExperimentError) as info:
        load_experiment(policy_experiment(tmp_path, "odd.yaml"))
    assert "edge_defaults.retry.max_attempts" in str(info.value)
    assert "hunter2" not in str(info.value)


def test_a_policy_file_in_the_folder_loads_with_the_overrides_applied(tmp_path: Path) -> None:
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "mine.yaml").write_text("name: mine\nretry_note: x\n")
    with pytest.raises(ExperimentError, match="retry_note"):
        load_experiment(policy_experiment(tmp_path, "policies/mine.yaml"))
    (tmp_path / "policies" / "mine.yaml").write_text(
        "name: mine\nedges: {gateway_to_profile: {retry: {max_attempts: 1}}}\n"
    )
    path, exp = load_experiment(policy_experiment(tmp_path, "policies/mine.yaml"))
    out = materialise_policy(path, "exp", exp.variants[0], tmp_path / "out")
    policy = load_policy(out, {})
    assert policy.name == "mine"
    assert policy.edge("gateway_to_profile").retry.max_attempts == 1, "no overrides: file as is"
    overrides = "{edges: {gateway_to_moon: {retry: {max_attempts: 2}}}}"
    with pytest.raises(ExperimentError, match=r"variants\.full\.overrides: .*gateway_to_moon"):
        load_experiment(policy_experiment(tmp_path, "policies/mine.yaml", overrides))
    overrides = "{edge_defaults: {retry: {max_attempts: 2}}}"
    path, exp = load_experiment(policy_experiment(tmp_path, "policies/mine.yaml", overrides))
    out = materialise_policy(path, "exp", exp.variants[0], tmp_path / "out")
    assert load_policy(out, {}).name == "mine+full"
    assert load_policy(out, {}).edge("gateway_to_payment").retry.max_attempts == 2
    # The documented quirk: a variant with overrides replaces the base's per-edge section.
    assert load_policy(out, {}).edge("gateway_to_profile").retry.max_attempts == 2


def test_a_bare_preset_is_run_by_name(tmp_path: Path) -> None:
    path, exp = load_experiment(write(tmp_path, GOOD))
    assert materialise_policy(path, "exp", exp.variants[0], tmp_path / "out") == "full"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "edge", ["gateway_to_profile", "recommendation_to_profile", "payment_to_redis"]
)
def test_toxicity_below_one_on_a_long_lived_connection_is_refused(
    tmp_path: Path, edge: str
) -> None:
    text = GOOD.replace(
        "edge: gateway_to_profile, toxic: latency,", f"edge: {edge}, toxic: latency, toxicity: 0.5,"
    )
    with pytest.raises(ExperimentError, match=rf"faults\.0: toxicity 0\.5 on {edge}") as info:
        load_experiment(write(tmp_path, text))
    assert "once per connection" in str(info.value)
    assert "every call or none" in str(info.value)
    assert "app_fault's error_rate" in str(info.value)


def test_toxicity_below_one_in_a_variant_fault_is_refused_too(tmp_path: Path) -> None:
    text = GOOD.replace(
        "variants: [{name: full}]",
        "variants: [{name: full, faults: [{type: toxic, edge: gateway_to_payment, toxic: timeout,"
        " toxicity: 0.2}]}]",
    )
    with pytest.raises(
        ExperimentError, match=r"variants\.0\.faults\.0: toxicity 0\.2 on gateway_to_payment"
    ):
        load_experiment(write(tmp_path, text))


@pytest.mark.parametrize(
    ("edge", "toxicity"), [("notification_to_smtp", 0.5), ("gateway_to_profile", 1.0)]
)
def test_toxicity_is_allowed_where_it_is_a_per_message_rate_or_certain(
    tmp_path: Path, edge: str, toxicity: float
) -> None:
    text = GOOD.replace(
        "edge: gateway_to_profile, toxic: latency,",
        f"edge: {edge}, toxic: latency, toxicity: {toxicity},",
    )
    _, exp = load_experiment(write(tmp_path, text))
    assert exp.faults[0].toxicity == toxicity  # type: ignore[union-attr]
