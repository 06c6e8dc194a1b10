"""Validating an experiment so that one bad fault hides nothing else in the file.

The schema's checks of a fault (its edge, toxic type and attributes, method, code, times) fail
that fault; the checks that need the whole experiment (its variants, expectations, metrics,
policies) then never ran, so a misspelled toxic attribute hid an unknown metric beside it. Here,
when every error is inside faults, the file is validated again with the faults taken as
written (their own checks off, a field of the wrong type left at its default), and the
experiment that comes out is only for finding the file's other errors: it is never run.
"""

from __future__ import annotations

import copy
import typing
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from grpc_resilience_mesh.chaos.experiment.model import (
    UNCHECKED_FAULTS,
    AppFault,
    Experiment,
    KillFault,
    ProxyDownFault,
    ToxicFault,
    XdsFault,
)
from grpc_resilience_mesh.chaos.experiment.naming import did_you_mean, shown

FAULT_MODELS: dict[str, type[BaseModel]] = {
    "toxic": ToxicFault,
    "proxy_down": ProxyDownFault,
    "app_fault": AppFault,
    "kill": KillFault,
    "xds": XdsFault,
}

Loc = tuple[int | str, ...]


def reason(error: ErrorDetails) -> str:
    """`faults.0.toxic: Value error, ...`: where in the file, and why; a misspelled key, at
    the top level as in a section, with the close name (`varients`: did you mean 'variants'?)."""
    where = ".".join(shown(str(p))[1:-1] for p in error["loc"])
    if error["type"] == "extra_forbidden" and error["loc"]:
        known = _fields_at(error["loc"][:-1])
        hint = did_you_mean(str(error["loc"][-1]), known) if known else ""
        if hint:
            return f"{where}: unknown key{hint}"
    return f"{where or '<top>'}: {error['msg']}"


def _fields_at(loc: Loc) -> list[str] | None:
    """The keys allowed where a location's next key sits: the experiment's at the top, a
    section's inside it (a fault's by its type tag); None where the walk cannot tell."""
    model: type[BaseModel] = Experiment
    at = _fault_at(loc)
    if at is not None:
        model, loc = FAULT_MODELS[str(loc[at])], loc[at + 1 :]
    for key in loc:
        if isinstance(key, int):
            continue
        field = model.model_fields.get(key)
        inner = _model_in(field.annotation) if field is not None else None
        if inner is None:
            return None
        model = inner
    return list(model.model_fields)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds, alone, optional or in a list; None for anything else."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def validated(
    raw: dict[str, Any], context: dict[str, Any] | None = None
) -> tuple[Experiment | None, list[str]]:
    """The experiment and no errors; or every schema error, with an experiment (for the
    checks beyond the schema, never to run) when all of them are inside faults."""
    try:
        return Experiment.model_validate(raw, context=context), []
    except ValidationError as err:
        errors = err.errors()
    reasons = [reason(e) for e in errors]
    lenient = _faults_unchecked(raw, errors)
    if lenient is None:
        return None, reasons
    try:
        return Experiment.model_validate(
            lenient, context={**(context or {}), UNCHECKED_FAULTS: True}
        ), reasons
    except ValidationError:
        return None, reasons


def _fault_at(loc: Loc) -> int | None:
    """Where a fault's type tag sits in an error's location (`faults.0.toxic...`,
    `variants.1.faults.0.toxic...`), None if the error is not in a fault."""
    if loc[:1] == ("faults",):
        at = 2
    elif loc[:1] == ("variants",) and len(loc) > 2 and loc[2] == "faults":
        at = 4
    else:
        return None
    if len(loc) > at and isinstance(loc[at - 1], int) and loc[at] in FAULT_MODELS:
        return at
    return None


def _faults_unchecked(raw: dict[str, Any], errors: list[ErrorDetails]) -> dict[str, Any] | None:
    """`raw` with each fault an error is in kept to its fields of the right type; None when an
    error is elsewhere, or a fault lacks a field it needs."""
    drop: dict[Loc, set[str]] = {}
    for e in errors:
        at = _fault_at(e["loc"])
        if at is None:
            return None
        fields = drop.setdefault(e["loc"][:at], set())
        rest = e["loc"][at + 1 :]
        if rest and e["type"] != "value_error":  # a value of the wrong type: left out
            fields.add(str(rest[0]))
    out = copy.deepcopy(raw)
    for loc, fields in drop.items():
        *parents, index = loc
        items: Any = out
        for key in parents:
            items = items[key]
        item = items[index]
        model = FAULT_MODELS[item["type"]]
        kept = {k: v for k, v in item.items() if k in model.model_fields and k not in fields}
        if any(f.is_required() and k not in kept for k, f in model.model_fields.items()):
            return None
        items[index] = kept
    return out
