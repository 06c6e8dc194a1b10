"""A variant's policy: a preset or a YAML file in the experiment's own folder, plus overrides.

An experiment file may come from anywhere, so what its `policy:` names must not reach outside
its folder: the path is resolved (symlinks followed) and refused unless it stays inside the
experiment's folder; only .yaml/.yml files are read, through the bounded loader, and a file
that fails to parse is named, never quoted. The result is validated by mesh's policy loader,
at load (before anything starts) and again when the runner writes it out.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from grpc_resilience_mesh.services import safe_yaml
from grpc_resilience_mesh.services.policy.loading import (
    PRESETS,
    PolicyError,
    deep_merge,
    load_policy_text,
    preset_text,
)
from grpc_resilience_mesh.services.policy.model import MeshPolicy

if TYPE_CHECKING:
    from grpc_resilience_mesh.chaos.experiment.model import Variant

SUFFIXES = (".yaml", ".yml")
DUMPER = yaml.CSafeDumper if yaml.__with_libyaml__ else yaml.SafeDumper
"""libyaml's emitter where PyYAML has it: the same text as the pure-Python one (all 112
documents a catalogue load writes compared byte for byte), a tenth of its time (0.5 s a load)."""


def policy_file(exp_path: Path, source: str) -> Path:
    """The file `source` names, relative to the experiment's folder and inside it."""
    folder = exp_path.parent.resolve()
    candidate = folder / source
    if candidate.suffix not in SUFFIXES:
        close = difflib.get_close_matches(source, PRESETS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise PolicyError(
            f"{source!r} is neither a preset ({', '.join(PRESETS)}) "
            f"nor a .yaml file in the experiment's folder{hint}"
        )
    resolved = candidate.resolve()
    if not resolved.is_relative_to(folder):
        raise PolicyError(f"{source!r} is outside the experiment's folder {folder}")
    if not resolved.is_file():
        raise PolicyError(f"{source!r}: no such file in {folder}")
    return resolved


def _validated(raw: Any, name: str) -> MeshPolicy:
    """Through mesh's own loader (no environment overrides); errors name keys, not values."""
    if not isinstance(raw, dict):
        raise PolicyError(f"{name}: the top level must be a mapping")
    return load_policy_text(yaml.dump(raw, Dumper=DUMPER, sort_keys=False), name, {})


def variant_policy(exp_path: Path, variant: Variant) -> str | dict[str, Any]:
    """A preset's name when the variant runs it as it is, else the policy document to run.

    With overrides, the base policy's per-edge section is replaced by the overrides' (their
    `edges` merge over `edge_defaults`); every other section is merged key by key. Raises
    PolicyError whose message starts with the variant's key.
    """
    key = f"variants.{variant.name}"
    try:
        if variant.policy in PRESETS:
            if not variant.overrides:
                return variant.policy
            name = variant.policy
            text = preset_text(name)
            raw = safe_yaml.load(text, name)
        else:
            path = policy_file(exp_path, variant.policy)
            name = str(path)
            raw = safe_yaml.load_file(name)
        base = _validated(raw, name)
    except (PolicyError, safe_yaml.YamlError) as err:
        raise PolicyError(f"{key}.policy: {err}") from None
    doc: dict[str, Any] = base.model_dump(mode="json")
    if not variant.overrides:
        return doc
    doc["name"] = f"{base.name}+{variant.name}"
    doc["edges"] = {}
    doc = deep_merge(doc, variant.overrides)
    _validated(doc, f"{key}.overrides")
    return doc


def materialise_policy(exp_path: Path, exp_name: str, variant: Variant, out_dir: Path) -> str:
    """The variant's policy as a preset name or a file written to `out_dir`, validated."""
    try:
        doc = variant_policy(exp_path, variant)
    except PolicyError as err:
        raise PolicyError(f"{exp_path}: {err}") from None
    if isinstance(doc, str):
        return doc
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{exp_name}.{variant.name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def policy_text(source: str) -> str:
    """The YAML of a preset name or a policy file."""
    if source in PRESETS:
        return preset_text(source)
    return Path(source).read_text()
