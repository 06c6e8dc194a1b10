"""What the topology files' models share: unknown keys refused with the close known one, and
pydantic's errors said as `services.front.command: reason`, as the catalogue's files say them."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_core import ErrorDetails

from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.experiment.naming import did_you_mean, shown
from grpc_resilience_mesh.services import safe_yaml


class StrictModel(BaseModel):
    """Every model of a topology or topology experiment file: unknown keys refused, frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def read_mapping(path: Path, what: str) -> dict[str, Any]:
    """The file's YAML as a mapping (the bounded loader), else ExperimentError naming it."""
    try:
        raw = safe_yaml.load_file(str(path))
    except safe_yaml.YamlError as err:
        raise ExperimentError(str(err)) from None
    if not isinstance(raw, dict):
        raise ExperimentError(f"{path}: not {what}: the top level must be a mapping")
    return raw


def reason(error: ErrorDetails, model: type[BaseModel]) -> str:
    """`where: why`; an unknown key gets the close known one and the list of known keys."""
    where = ".".join(shown(str(p))[1:-1] for p in error["loc"]) or "<top>"
    if error["type"] == "extra_forbidden":
        known = _known_keys(model, error["loc"][:-1])
        name = str(error["loc"][-1])
        return f"{where}: unknown key{did_you_mean(name, known)} (known: {', '.join(known)})"
    return f"{where}: {error['msg'].removeprefix('Value error, ')}"


def _known_keys(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The keys the model at `loc` takes (aliases where a field has one)."""
    annotation: Any = model
    for key in loc:
        annotation = _step(annotation, key)
    inner = _model_of(annotation)
    if inner is None:
        return []
    return [f.alias or name for name, f in inner.model_fields.items()]


def _step(annotation: Any, key: int | str) -> Any:
    """The annotation one key further in: a model's field, a list's item, a dict's value."""
    inner = _model_of(annotation)
    if inner is not None:
        return _by_key(inner).get(str(key))
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def _by_key(model: type[BaseModel]) -> dict[str, Any]:
    return {(f.alias or n): f.annotation for n, f in model.model_fields.items()}


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for arg in typing.get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None
