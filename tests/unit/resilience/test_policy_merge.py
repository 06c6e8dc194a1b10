"""The one deep merge and the one preset loader, which chaos's variant policies use too."""

from __future__ import annotations

from typing import Any

import pytest

from grpc_resilience_mesh.services import safe_yaml
from grpc_resilience_mesh.services.policy.loading import (
    PRESETS,
    PolicyError,
    deep_merge,
    load_policy,
    load_policy_text,
    preset_text,
    read_policy_document,
)


def test_deep_merge_merges_mappings_key_by_key_and_replaces_the_rest() -> None:
    base: dict[str, Any] = {"retry": {"max_attempts": 3, "codes": ["UNAVAILABLE"]}, "keep": 1}
    override: dict[str, Any] = {"retry": {"max_attempts": 5}, "new": {"x": [1]}}
    merged = deep_merge(base, override)
    assert merged == {
        "retry": {"max_attempts": 5, "codes": ["UNAVAILABLE"]},
        "keep": 1,
        "new": {"x": [1]},
    }
    assert base == {"retry": {"max_attempts": 3, "codes": ["UNAVAILABLE"]}, "keep": 1}
    merged["new"]["x"].append(2)
    assert override["new"]["x"] == [1]


def test_a_list_or_scalar_override_replaces_a_mapping_whole() -> None:
    assert deep_merge({"a": {"b": 1}}, {"a": [1]}) == {"a": [1]}
    assert deep_merge({"a": [1, 2]}, {"a": {"b": 1}}) == {"a": {"b": 1}}


@pytest.mark.parametrize("name", PRESETS)
def test_preset_text_is_what_load_policy_loads(name: str) -> None:
    assert load_policy_text(preset_text(name), name, {}) == load_policy(name, {})
    path, doc = read_policy_document(name)
    assert path.endswith(f"{name}.yaml")
    assert doc == safe_yaml.load(preset_text(name), path)


def test_an_unknown_preset_is_refused_with_the_list() -> None:
    with pytest.raises(PolicyError, match="not a preset"):
        preset_text("fulll")
