"""Each variant's scenario params, validated against the scenario's model when the file loads.

A scenario experiment's `params` and each variant's `params` are merged, as the runner merges them,
and validated by the model the scenario registered (grpc_resilience_mesh/chaos/scenarios/params.py),
so a value the run would divide by, wait on without end or hand to a worker that refuses it is
refused before anything starts. An error is placed where the value was written (the file's `params`
or a variant's) and says the field's range, or the close name of a misspelled one.
"""

from __future__ import annotations

import typing
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.experiment.naming import did_you_mean, shown
from grpc_resilience_mesh.chaos.registry import SCENARIOS


def param_problems(exp: Experiment) -> list[str]:
    """Every variant's merged params the scenario's model refuses (each error once); params
    on an experiment that has no scenario to read them."""
    if exp.scenario is None:
        given = ["params"] if exp.params else []
        given += [f"variants.{j}.params" for j, v in enumerate(exp.variants) if v.params]
        return [f"{where}: only a scenario experiment reads params" for where in given]
    scenario = SCENARIOS[exp.scenario]
    found: dict[str, None] = {}
    for j, variant in enumerate(exp.variants):
        try:
            scenario.parse({**exp.params, **variant.params})
        except ValidationError as err:
            for e in err.errors():
                found[_reason(_where(e, j, variant.params), e, scenario.params)] = None
    return list(found)


def _where(error: ErrorDetails, j: int, mine: dict[str, Any]) -> str:
    """Where the value was written: the variant's params or the file's; a check across
    fields, both when the variant has params of its own."""
    if not error["loc"]:
        return f"params with variants.{j}.params" if mine else "params"
    return f"variants.{j}.params" if error["loc"][0] in mine else "params"


def _reason(where: str, error: ErrorDetails, model: type[BaseModel]) -> str:
    path = ".".join(shown(str(p))[1:-1] for p in error["loc"])
    at = f"{where}.{path}" if path else where
    field = _field(model, error["loc"])
    if error["type"] == "extra_forbidden":
        known = list(_model_at(model, error["loc"][:-1]).model_fields)
        if not known:
            return f"{at}: this scenario takes no params"
        name = str(error["loc"][-1])
        return f"{at}: unknown param{did_you_mean(name, known)} (known: {', '.join(known)})"
    msg = error["msg"].removeprefix("Value error, ")
    span = field_range(field) if field is not None else None
    return f"{at}: {msg}" + (f" (range {span})" if span else "")


def _model_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel]:
    """The model a location's last key belongs to (through nested models and their lists)."""
    for key in loc:
        if isinstance(key, int):
            continue
        field = model.model_fields.get(key)
        inner = nested(field.annotation) if field is not None else None
        if inner is None:
            return model
        model = inner
    return model


def _field(model: type[BaseModel], loc: tuple[int | str, ...]) -> FieldInfo | None:
    if not loc or not isinstance(loc[-1], str):
        return None
    return _model_at(model, loc[:-1]).model_fields.get(loc[-1])


def nested(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds, alone or in a list; None for a plain value."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def field_range(field: FieldInfo) -> str | None:
    """A field's bounds as an interval, `(0, 1]`, from its constraints."""
    low = high = None
    for m in field.metadata:
        if isinstance(m, Ge | Gt):
            low = f"[{_number(m.ge)}" if isinstance(m, Ge) else f"({_number(m.gt)}"
        if isinstance(m, Le | Lt):
            high = f"{_number(m.le)}]" if isinstance(m, Le) else f"{_number(m.lt)})"
    if low is None and high is None:
        return None
    return f"{low or '(-inf'}, {high or 'inf)'}"


def _number(value: Any) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"
