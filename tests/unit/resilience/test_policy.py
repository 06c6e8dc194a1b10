"""Policy loading: presets, per-edge merging, env overrides, and errors that name the key."""

from __future__ import annotations

import dataclasses
import itertools
import re
import typing
from importlib import resources
from pathlib import Path

import annotated_types
import pytest
import yaml
from pydantic.fields import FieldInfo

from grpc_aio_resilience import (
    AimdPolicy,
    EdgePolicy,
    Gradient2Policy,
    LimitPolicy,
    QueuePolicy,
    RetryBudgetPolicy,
    VegasPolicy,
    option_rows,
)
from grpc_resilience_mesh.services.policy.loading import PolicyError, load_policy, load_policy_text
from grpc_resilience_mesh.services.policy.model import FallbackPolicy
from grpc_resilience_mesh.services.policy.pool import MeshServerPolicy, PoolPolicy


def test_full_is_the_default_and_documents_its_values() -> None:
    policy = load_policy(None, {})
    assert policy.name == "full"
    edge = policy.edge("gateway_to_profile")
    assert edge.retry.max_attempts == 3
    assert edge.breaker.scope == "method"
    assert edge.breaker.consecutive_failures == 5
    assert edge.bulkhead.max_concurrent == 40
    assert policy.server("profile").max_in_flight == 64


def test_mesh_policy_env_picks_the_preset() -> None:
    assert load_policy(None, {"MESH_POLICY": "retry-only"}).name == "retry-only"
    assert load_policy(None, {"MESH_POLICY": " "}).name == "full", "blank is unset, as for all"


def test_presets_mirror_the_seed_variants() -> None:
    unprotected = load_policy("unprotected", {}).edge("gateway_to_recommendation")
    assert unprotected.retry.max_attempts == 1
    assert not unprotected.breaker.enabled and not unprotected.bulkhead.enabled
    retry_only = load_policy("retry-only", {}).edge("gateway_to_recommendation")
    assert retry_only.retry.max_attempts == 3 and not retry_only.retry.budget.enabled
    assert not retry_only.breaker.enabled


def test_edge_overrides_merge_over_the_defaults() -> None:
    policy = load_policy("full", {})
    payment = policy.edge("gateway_to_payment")
    assert payment.retry.max_attempts == 2
    assert payment.retry.base_backoff_s == policy.edge_defaults.retry.base_backoff_s
    assert payment.bulkhead.max_concurrent == 16
    assert payment.bulkhead.mode == "reject"


def test_env_overrides_reach_edges_defaults_and_servers() -> None:
    policy = load_policy(
        "full",
        {
            "MESH_POLICY__GATEWAY_TO_PAYMENT__RETRY__MAX_ATTEMPTS": "1",
            "MESH_POLICY__EDGE_DEFAULTS__BREAKER__OPEN_S": "5",
            "MESH_POLICY__PROFILE__MAX_IN_FLIGHT": "8",
        },
    )
    assert policy.edge("gateway_to_payment").retry.max_attempts == 1
    assert policy.edge("gateway_to_profile").breaker.open_s == 5.0
    assert policy.server("profile").max_in_flight == 8
    assert policy.server("payment").max_in_flight == 64


def test_a_policy_file_by_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("edge_defaults:\n  retry: {max_attempts: 4}\n")
    policy = load_policy(str(path), {})
    assert policy.name == "mine"
    assert policy.edge("gateway_to_profile").retry.max_attempts == 4


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("edge_defaults:\n  retry: {max_atempts: 4}\n", "edge_defaults.retry.max_atempts"),
        (
            "edges:\n  gateway_to_payment:\n    retry: {max_attempts: 0}\n",
            "edges.gateway_to_payment.retry.max_attempts",
        ),
        ("edges:\n  gateway_to_nowhere: {}\n", "edges.gateway_to_nowhere"),
        ("edge_defaults:\n  breaker: {scope: global}\n", "edge_defaults.breaker.scope"),
        ("edge_defaults:\n  retry: {base_backoff_s: 2, max_backoff_s: 1}\n", "max_backoff_s"),
        ("- just\n- a list\n", "top level must be a mapping"),
        ("edge_defaults: {retry: [unclosed\n", "not valid YAML"),
    ],
)
def test_bad_files_name_the_file_and_key(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError) as caught:
        load_policy(str(path), {})
    assert str(path) in str(caught.value)
    assert named in str(caught.value)


def test_bad_env_override_names_the_variable() -> None:
    with pytest.raises(PolicyError, match="MESH_POLICY__NOWHERE__RETRY"):
        load_policy("full", {"MESH_POLICY__NOWHERE__RETRY__MAX_ATTEMPTS": "2"})
    with pytest.raises(PolicyError, match=r"edges\.gateway_to_payment\.retry\.max_attempts"):
        load_policy("full", {"MESH_POLICY__GATEWAY_TO_PAYMENT__RETRY__MAX_ATTEMPTS": "many"})


def test_unknown_source_lists_the_presets() -> None:
    with pytest.raises(PolicyError, match="unprotected, retry-only, full"):
        load_policy("/no/such/policy.yaml", {})


# Only values that keep an edge working: finite, in a documented range, cross-field rules.

FULL_YAML = resources.files("grpc_resilience_mesh.services") / "policies" / "full.yaml"


def edge_doc(section: str, **fields: object) -> str:
    return yaml.safe_dump({"edge_defaults": {section: fields}})


@pytest.mark.parametrize(
    ("text", "key", "rule"),
    [
        ("edge_defaults: {breaker: {window_size: 100000000000000000000}}", "window_size", "1000"),
        ("edge_defaults: {breaker: {open_s: .inf}}", "breaker.open_s", "finite"),
        ("edge_defaults: {deadline: {min_attempt_s: .inf}}", "deadline.min_attempt_s", "finite"),
        ("edge_defaults: {deadline: {total_s: .nan}}", "deadline.total_s", "finite"),
        ("edge_defaults: {retry: {max_backoff_s: 1e999}}", "retry.max_backoff_s", "finite"),
        ("edge_defaults: {deadline: {total_s: 1.0e+9}}", "deadline.total_s", "300"),
        ("edge_defaults: {bulkhead: {max_concurrent: 1.0e+12}}", "max_concurrent", "10000"),
        ("edge_defaults: {bulkhead: {max_wait_s: -.inf}}", "bulkhead.max_wait_s", "finite"),
        ("edge_defaults: {breaker: {half_open_max_probes: 1000000}}", "max_probes", "100"),
        ("server_defaults: {shed_pushback_ms: 99999999999}", "shed_pushback_ms", "60000"),
        ("fallbacks: {popular_ttl_s: .inf}", "fallbacks.popular_ttl_s", "finite"),
        ("edge_defaults: {native_retry: {backoff_multiplier: .nan}}", "multiplier", "finite"),
    ],
)
def test_values_that_break_an_edge_are_refused_naming_the_key(
    text: str, key: str, rule: str
) -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy_text(text, "doc.yaml", {})
    assert str(caught.value).startswith("doc.yaml: ")
    assert key in str(caught.value) and rule in str(caught.value)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (
            edge_doc("deadline", total_s=0.2, attempt_s=0.3),
            "deadline.attempt_s: 0.3 must be <= total_s (0.2)",
        ),
        (
            edge_doc("deadline", min_attempt_s=0.3, attempt_s=0.3),
            "deadline.min_attempt_s: 0.3 must be < attempt_s (0.3)",
        ),
        (
            edge_doc("retry", base_backoff_s=2, max_backoff_s=1),
            "retry.base_backoff_s: 2 must be <= max_backoff_s (1)",
        ),
        (
            edge_doc("breaker", min_calls=30, window_size=20),
            "breaker.min_calls: 30 must be <= window_size (20)",
        ),
        (
            edge_doc("breaker", half_open_max_probes=1, half_open_successes=2),
            "breaker.half_open_successes: 2 must be <= half_open_max_probes (1)",
        ),
        (
            edge_doc("native_retry", initial_backoff_s=2, max_backoff_s=1),
            "native_retry.initial_backoff_s: 2 must be <= max_backoff_s (1)",
        ),
        (edge_doc("native_retry", retryable_codes=["SLOW"]), "'SLOW' is not a gRPC error code"),
        (edge_doc("native_retry", retryable_codes=["OK"]), "'OK' is not a gRPC error code"),
        (
            "edges: {gateway_to_recommendation: {deadline: {total_s: 0.2}}}",
            "edges.gateway_to_recommendation.deadline.attempt_s: 0.3 must be <= total_s (0.2)",
        ),
        (
            "edges: {gateway_to_payment: {bulkhead: {pool: p}},"
            " gateway_to_profile: {bulkhead: {pool: p, max_concurrent: 5}}}",
            "pool 'p' is shared with gateway_to_payment, so its bulkhead settings must be the same",
        ),
    ],
)
def test_cross_field_rules_name_both_fields(text: str, rule: str) -> None:
    with pytest.raises(PolicyError, match=re.escape(rule)):
        load_policy_text(text, "doc.yaml", {})


def test_pools_of_different_callers_may_differ() -> None:
    policy = load_policy_text(
        "edges: {gateway_to_profile: {bulkhead: {pool: p}},"
        " recommendation_to_profile: {bulkhead: {pool: p, max_concurrent: 5}}}",
        "doc.yaml",
        {},
    )
    assert policy.edge("recommendation_to_profile").bulkhead.max_concurrent == 5


def test_native_backoffs_stay_service_config_durations() -> None:
    policy = load_policy_text(edge_doc("native_retry", initial_backoff_s=0.1 + 0.2), "d", {})
    assert repr(policy.edge_defaults.native_retry.initial_backoff_s) == "0.3"


def documented_range(info: FieldInfo) -> str:
    """The interval a pydantic field's bounds allow, as the docs write it: [a, b] or (a, b]."""
    lower = next(m for m in info.metadata if isinstance(m, annotated_types.Ge | annotated_types.Gt))
    upper = next(m for m in info.metadata if isinstance(m, annotated_types.Le))
    low = lower.ge if isinstance(lower, annotated_types.Ge) else lower.gt
    opening = "[" if isinstance(lower, annotated_types.Ge) else "("
    return f"{opening}{low:g}, {upper.le:g}]"


def numeric_fields() -> list[tuple[str, str, str]]:
    """(section, field, its range) of every number of the policy, the options classes' ranges
    from their option(...) (as the generated docs print them), the mesh's own from pydantic."""
    classes: list[tuple[str, type]] = [
        (name, kind)
        for name, kind in typing.get_type_hints(EdgePolicy).items()
        if isinstance(kind, type) and dataclasses.is_dataclass(kind)
    ]
    classes += [("budget", RetryBudgetPolicy), ("server_defaults", MeshServerPolicy)]
    classes += [("limit", LimitPolicy), ("queue", QueuePolicy)]
    classes += [("vegas", VegasPolicy), ("gradient2", Gradient2Policy), ("aimd", AimdPolicy)]
    classes += [("pool", PoolPolicy)]
    found = []
    for section, cls in classes:
        for row in option_rows(cls):
            if "." not in row.name and {"int", "float"} & set(row.kind.split(" \\| ")):
                found.append((section, row.name, row.range))
    for name, info in FallbackPolicy.model_fields.items():
        found.append(("fallbacks", name, documented_range(info)))
    return found


def comments_above(doc: list[str], section: str, name: str) -> str:
    """The comment block that documents `section.name` in full.yaml: the nearest one above
    the field, past fields that share it (window_size and min_calls share one)."""
    start = next(i for i, text in enumerate(doc) if text.strip() == f"{section}:")
    line = next(i for i in range(start, len(doc)) if doc[i].strip().startswith(f"{name}:"))
    block: list[str] = []
    for text in reversed(doc[start + 1 : line]):
        if text.strip().startswith("#"):
            block.append(text.strip())
        elif block:
            break
    return " ".join(reversed(block))


def test_every_number_has_a_range_written_beside_it_and_in_full_yaml() -> None:
    fields = numeric_fields()
    assert len(fields) >= 25
    doc = FULL_YAML.read_text(encoding="utf-8").splitlines()
    for section, name, interval in fields:
        assert interval.startswith(("[", "(")), (section, name, interval)
        assert interval in comments_above(doc, section, name), (section, name, interval)


def test_the_bomb_is_refused_before_anything_walks_it() -> None:
    levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in itertools.pairwise("abcdefghi"):
        levels.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    with pytest.raises(PolicyError, match="nodes once aliases are expanded"):
        load_policy_text("\n".join(levels), "SetPolicy.yaml", {})
    with pytest.raises(PolicyError, match="nesting deeper than"):
        load_policy_text("[" * 10_000 + "]" * 10_000, "SetPolicy.yaml", {})


def test_an_override_changes_one_place_even_when_the_file_shares_a_block() -> None:
    text = "edge_defaults: &d {retry: {max_attempts: 2}}\nedges: {gateway_to_payment: *d}\n"
    env = {"MESH_POLICY__EDGE_DEFAULTS__RETRY__MAX_ATTEMPTS": "4"}
    policy = load_policy_text(text, "doc.yaml", env)
    assert policy.edge("gateway_to_profile").retry.max_attempts == 4
    assert policy.edge("gateway_to_payment").retry.max_attempts == 2


# Bad configuration: one line naming the variable, the key and the rule; never the document.


@pytest.mark.parametrize(
    ("env", "words"),
    [
        (
            {"MESH_POLICY__PROFILE__MAX_IN_FLIGHT": "[unclosed"},
            "MESH_POLICY__PROFILE__MAX_IN_FLIGHT: not valid YAML: line 1, column 10",
        ),
        (
            {"MESH_POLICY__EDGE_DEFAULTS__BREAKER__OPEN_S": ".inf"},
            "MESH_POLICY__EDGE_DEFAULTS__BREAKER__OPEN_S: edge_defaults.breaker.open_s: "
            "Input should be a finite number",
        ),
        (
            {"MESH_POLICY__GATEWAY_TO_PAYMENT__DEADLINE__TOTAL_S": "0.1"},
            "MESH_POLICY__GATEWAY_TO_PAYMENT__DEADLINE__TOTAL_S: edges.gateway_to_payment."
            "deadline.attempt_s: 0.8 must be <= total_s (0.1)",
        ),
        (
            {"MESH_POLICY__EDGES__NOWHERE__RETRY__MAX_ATTEMPTS": "2"},
            "MESH_POLICY__EDGES__NOWHERE__RETRY__MAX_ATTEMPTS: edges.nowhere: unknown edge",
        ),
        ({"MESH_POLICY__": "1"}, "MESH_POLICY__: no policy key"),
        (
            {"MESH_POLICY__PROFILE__MAX_IN_FLIGHT": "[" * 5000},
            "MESH_POLICY__PROFILE__MAX_IN_FLIGHT: line 1, column 33: nesting deeper",
        ),
    ],
)
def test_a_bad_override_is_named_not_the_file(env: dict[str, str], words: str) -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy("full", env)
    message = str(caught.value)
    assert message.startswith(words), message
    assert "full.yaml" not in message and "\n" not in message


def test_an_override_of_the_defaults_is_reported_once_not_per_edge() -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy("full", {"MESH_POLICY__EDGE_DEFAULTS__BREAKER__OPEN_S": "-1"})
    assert str(caught.value).count("open_s") == 1


def test_a_policy_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(PolicyError, match=rf"^{re.escape(str(path))}: not UTF-8 text \(byte 9\)"):
        load_policy(str(path), {})
    with pytest.raises(PolicyError, match=rf"^MESH_POLICY: {re.escape(str(path))}: not UTF-8"):
        load_policy(None, {"MESH_POLICY": str(path)})


def test_messages_name_keys_and_rules_never_the_values() -> None:
    secret = "hunter2-" * 20
    text = yaml.safe_dump(
        {
            "edge_defaults": {"retry": {"max_attempts": secret}, "breaker": {"scope": secret}},
            "servers": {"k" * 500: {}},
            "fallbacks": {"popular_ttl_s": [secret] * 50},
        }
    )
    with pytest.raises(PolicyError) as caught:
        load_policy_text(text, "doc.yaml", {})
    message = str(caught.value)
    assert "hunter2" not in message and "k" * 50 not in message
    assert "edge_defaults.retry.max_attempts: Input should be a valid integer" in message
    assert len(message) < 800


def test_many_problems_are_summed_up() -> None:
    text = yaml.safe_dump({"edge_defaults": {"retry": {f"x{i}": 1 for i in range(40)}}})
    with pytest.raises(PolicyError, match=r"and 35 more$"):
        load_policy_text(text, "doc.yaml", {})


@pytest.mark.parametrize("preset", ["unprotected", "retry-only", "full"])
def test_presets_keep_the_static_limit_no_queue_and_no_pool(preset: str) -> None:
    server = load_policy(preset, {}).server("recommendation")
    assert server.limit.algorithm == "static" and not server.limit.deadline_aware
    assert server.queue.discipline == "none"
    assert server.pool.workers == 0


def test_admission_and_the_pool_are_set_per_service_from_the_environment() -> None:
    env = {
        "MESH_POLICY__RECOMMENDATION__LIMIT__ALGORITHM": "gradient2",
        "MESH_POLICY__RECOMMENDATION__LIMIT__GRADIENT2__MIN_LIMIT": "2",
        "MESH_POLICY__RECOMMENDATION__QUEUE__DISCIPLINE": "codel",
        "MESH_POLICY__RECOMMENDATION__POOL": "{workers: 4, service_time_s: 0.02, seed: 1}",
    }
    policy = load_policy("full", env)
    server = policy.server("recommendation")
    assert server.limit.algorithm == "gradient2" and server.limit.gradient2.min_limit == 2
    assert server.limit.gradient2.max_concurrency == 200, "the reference's default"
    assert server.queue.discipline == "codel" and server.queue.codel_target_s == 0.005
    assert (server.pool.workers, server.pool.service_time_s) == (4, 0.02)
    assert policy.server("profile").limit.algorithm == "static"


def test_codel_m_must_be_shorter_than_n() -> None:
    with pytest.raises(
        PolicyError, match=r"codel_target_s: 0.2 must be < codel_interval_s \(0.1\)"
    ):
        load_policy("full", {"MESH_POLICY__SERVER_DEFAULTS__QUEUE__CODEL_TARGET_S": "0.2"})
