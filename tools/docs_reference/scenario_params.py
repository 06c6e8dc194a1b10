"""docs/reference/scenario-params.md: every scenario's params, their defaults and ranges, from
the models the loader validates them with (grpc_resilience_mesh/chaos/scenarios/params.py)."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from grpc_resilience_mesh.chaos.experiment.scenario_params import field_range, nested
from grpc_resilience_mesh.chaos.registry import SCENARIOS
from tools.docs_reference.render import code, header, table


def _rows(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str, str, str]]:
    for name, field in model.model_fields.items():
        inner = nested(field.annotation)
        if inner is not None:
            yield from _rows(inner, f"{prefix}{name}.")
            continue
        default = field.default
        shown = "required" if default is PydanticUndefined else code(_literal(default))
        span = field_range(field) or ""
        why = (field.description or "").removeprefix(span).lstrip(":;, ")
        yield code(prefix + name), shown, span, why


def _literal(value: object) -> str:
    """A default as YAML would write it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    return "null" if value is None else str(value)


def page() -> str:
    parts = [
        header(
            "Scenario params",
            "the scenarios' params models (`grpc_resilience_mesh/chaos/scenarios/params.py`)",
        ),
        "\nA scenario experiment's `params`, merged with each variant's, are validated by its "
        "scenario's model when the file is loaded (`mesh chaos validate`, `run`, `plan`): an "
        "unknown key, a value out of its range or params that together would not end are "
        "refused, naming the field. The format: [the experiment file](../experiment-file.md).\n",
    ]
    for name in sorted(SCENARIOS):
        model = SCENARIOS[name].params
        rows = list(_rows(model))
        if rows:
            parts += [f"\n## {name}\n\n{model.__doc__ or ''}\n\n"]
            parts.append(table(("param", "default", "range", "what, and why the range"), rows))
    return "".join(parts)
