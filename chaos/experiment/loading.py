"""Loading an experiment: find the file, parse it (bounded), validate it, and check everything
that can be checked without a mesh.

The schema (chaos/experiment/model.py) checks each key; this module then checks the names an
experiment takes from the registries (its checks and its scenario, chaos/registry.py, with
the built-ins registered by chaos/scenarios/__init__.py), every expectation's metric against what
its phase measures (chaos/experiment/metric_names.py), and every variant's policy through
mesh's policy loader.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

import chaos.scenarios  # noqa: F401 - registers the built-in checks and scenarios
from chaos.experiment import metric_names
from chaos.experiment.lesson_order import lesson_rank
from chaos.experiment.model import (
    EXPERIMENTS_DIR,
    Experiment,
    ExperimentError,
    Fault,
    ToxicFault,
    did_you_mean,
    shown,
)
from chaos.experiment.variant_policy import variant_policy
from chaos.registry import CHECKS, SCENARIOS
from mesh import safe_yaml
from mesh.resilience.policy import PolicyError


def unknown_names(exp: Experiment) -> str | None:
    """The first check or scenario the experiment names that nothing registered, else None."""
    if exp.scenario is not None and exp.scenario not in SCENARIOS:
        return f"scenario: unknown {shown(exp.scenario)}; known: {', '.join(sorted(SCENARIOS))}"
    for check in exp.checks:
        if check not in CHECKS:
            return f"checks: unknown check {shown(check)}; known: {', '.join(sorted(CHECKS))}"
    return None


PER_MESSAGE_EDGES = frozenset({"notification_to_smtp"})
"""Edges whose caller opens a new connection for every message (the worker's smtplib sends
each receipt on its own connection). Every other edge carries many calls on a few long-lived
connections: a gRPC channel multiplexes every call over one HTTP/2 connection, and Redis
clients keep a small pool open."""


def chance_toxicity(fault: Fault) -> str | None:
    """Why a toxic's effect would be decided by chance once per connection, else None.

    Toxiproxy rolls `toxicity` once per connection, not per request. On an edge whose calls
    share one long-lived connection, `toxicity: 0.5` therefore hits every call or none, and a
    run that never met the fault reports a protection that was never tested.
    """
    if not isinstance(fault, ToxicFault) or fault.toxicity >= 1 or fault.edge in PER_MESSAGE_EDGES:
        return None
    return (
        f"toxicity {fault.toxicity:g} on {fault.edge}: Toxiproxy rolls toxicity once per "
        "connection, and this edge carries every call over one long-lived connection (gRPC: "
        "one HTTP/2 connection per channel; Redis: a small pool), so the toxic hits every "
        "call or none, by chance; use toxicity 1, or model a per-request rate with an "
        "app_fault's error_rate (and delay_s for latency)"
    )


def resolve(name_or_path: str) -> Path:
    """An experiment by catalogue name (`provider-outage`) or by path to a YAML file."""
    path = Path(name_or_path)
    try:
        if path.suffix in (".yaml", ".yml") or path.exists():
            if not path.is_file():
                raise ExperimentError(f"{name_or_path}: no such file")
            return path
        candidate = EXPERIMENTS_DIR / f"{name_or_path}.yaml"
        found = candidate.is_file()
    except OSError as err:
        raise ExperimentError(f"{name_or_path}: cannot read: {err.strerror or err}") from None
    if not found:
        known = sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.yaml"))
        hint = did_you_mean(name_or_path, known)
        raise ExperimentError(
            f"{name_or_path}: no such experiment{hint} (known: {', '.join(known)})"
        )
    return candidate


def load_experiment(name_or_path: str) -> tuple[Path, Experiment]:
    """Parse (bounded), validate, and check everything that can be checked without a mesh."""
    path = resolve(name_or_path)
    try:
        raw = safe_yaml.load_file(str(path))
    except safe_yaml.YamlError as err:
        raise ExperimentError(str(err)) from None
    if not isinstance(raw, dict):
        raise ExperimentError(f"{path}: not an experiment: the top level must be a mapping")
    why = safe_yaml.not_a(raw, "an experiment", "title or faults")
    if why is not None:
        raise ExperimentError(f"{path}: {why}")
    try:
        exp = Experiment.model_validate(raw)
    except ValidationError as err:
        reasons = "; ".join(
            f"{'.'.join(shown(str(p))[1:-1] for p in e['loc']) or '<top>'}: {e['msg']}"
            for e in err.errors()
        )
        raise ExperimentError(f"{path}: {reasons}") from None
    unknown = unknown_names(exp)
    if unknown:
        raise ExperimentError(f"{path}: <top>: Value error, {unknown}")
    found = problems(path, exp)
    if found:
        raise ExperimentError(f"{path}: {'; '.join(found)}")
    return path, exp


def problems(path: Path, exp: Experiment) -> list[str]:
    """What the schema cannot see: metrics nothing measures, policies that do not load, toxics
    whose toxicity would decide by chance whether the run meets the fault at all."""
    found = []
    variants = {v.name: v for v in exp.variants}
    for i, fault in enumerate(exp.faults):
        chance = chance_toxicity(fault)
        if chance:
            found.append(f"faults.{i}: {chance}")
    for j, variant in enumerate(exp.variants):
        for i, fault in enumerate(variant.faults or []):
            chance = chance_toxicity(fault)
            if chance:
                found.append(f"variants.{j}.faults.{i}: {chance}")
    for i, e in enumerate(exp.expectations):
        why = metric_names.why_not(e.metric, exp, variants[e.variant], e.phase)
        if why:
            found.append(f"expectations.{i}.metric: {why}")
    for column in exp.columns:
        whys = [metric_names.why_not(column, exp, v, "fault") for v in exp.variants]
        if all(whys):
            found.append(f"columns: {whys[0]}")
    for variant in exp.variants:
        try:
            variant_policy(path, variant)
        except PolicyError as err:
            found.append(str(err))
    return found


def catalogue() -> list[tuple[Path, Experiment]]:
    """Every experiment of the catalogue, in the order the lesson builds (lesson_order.py)."""
    paths = sorted(EXPERIMENTS_DIR.glob("*.yaml"), key=lambda p: lesson_rank(p.stem))
    return [load_experiment(str(p)) for p in paths]
