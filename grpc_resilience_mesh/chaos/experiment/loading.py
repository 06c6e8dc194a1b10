"""Loading an experiment: find the file, parse it (bounded), validate it, and check everything
that can be checked without a mesh.

The schema (grpc_resilience_mesh/chaos/experiment/model.py) checks each key; this module then checks
the names an experiment takes from the registries (its checks and its scenario,
grpc_resilience_mesh/chaos/registry.py, with the built-ins declared as data by
grpc_resilience_mesh/chaos/scenarios/declarations.py: no implementation is imported to load an
experiment), every expectation's metric against what its phase measures
(grpc_resilience_mesh/chaos/experiment/metric_names.py), every variant's scenario params against its
scenario's model (grpc_resilience_mesh/chaos/experiment/scenario_params.py), the loads' planned time
(grpc_resilience_mesh/chaos/experiment/planned.py), and every variant's policy through mesh's policy
loader.
"""

from __future__ import annotations

from pathlib import Path

import grpc_resilience_mesh.chaos.scenarios.declarations  # noqa: F401 - declares the built-in checks and scenarios
from grpc_resilience_mesh.chaos.experiment import metric_names
from grpc_resilience_mesh.chaos.experiment.lenient import validated
from grpc_resilience_mesh.chaos.experiment.model import (
    EXPERIMENTS_DIR,
    Experiment,
    ExperimentError,
    Fault,
    ToxicFault,
)
from grpc_resilience_mesh.chaos.experiment.naming import did_you_mean, shown
from grpc_resilience_mesh.chaos.experiment.planned import too_long
from grpc_resilience_mesh.chaos.experiment.scenario_params import param_problems
from grpc_resilience_mesh.chaos.experiment.variant_policy import variant_policy
from grpc_resilience_mesh.chaos.registry import CHECKS, SCENARIOS
from grpc_resilience_mesh.services import safe_yaml
from grpc_resilience_mesh.services.policy.loading import PolicyError


def unknown_names(exp: Experiment) -> list[str]:
    """Every check or scenario the experiment names that nothing registered."""
    found = []
    if exp.scenario is not None and exp.scenario not in SCENARIOS:
        found.append(
            f"scenario: unknown {shown(exp.scenario)}; known: {', '.join(sorted(SCENARIOS))}"
        )
    for check in exp.checks:
        if check not in CHECKS:
            found.append(
                f"checks: unknown check {shown(check)}; known: {', '.join(sorted(CHECKS))}"
            )
    return found


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


def load_experiment(name_or_path: str, short_sweep: bool = False) -> tuple[Path, Experiment]:
    """Parse (bounded), validate, and check everything that can be checked without a mesh;
    `short_sweep`: a sweep's shorter demo variant
    (grpc_resilience_mesh/chaos/experiment/sweep.py)."""
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
    exp, found = validated(raw, {"short_sweep": short_sweep})
    if exp is not None:
        unknown = unknown_names(exp)
        found += [f"<top>: Value error, {name}" for name in unknown]
        planned = too_long(exp)
        found += [planned] if planned else []
        if not unknown:  # the metrics a check or scenario measures are known once it is
            found += param_problems(exp) + problems(path, exp)
    if found or exp is None:
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
    # Imported here: checking one file needs no lesson order (test_validate_imports.py's cap).
    from grpc_resilience_mesh.chaos.experiment.lesson_order import lesson_rank

    paths = sorted(EXPERIMENTS_DIR.glob("*.yaml"), key=lambda p: lesson_rank(p.stem))
    return [load_experiment(str(p)) for p in paths]
