"""Policy loading: presets, per-edge merging, env overrides, and errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from mesh.resilience.policy import PolicyError, load_policy


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
