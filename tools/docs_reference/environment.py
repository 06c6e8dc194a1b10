"""docs/reference/environment.md: every variable the code reads. Those behind a settings model
come from the model itself (default, and the rule stated by the rule's own error message); the
rest are found by reading the calls that take a variable's name from the environment."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BeforeValidator
from pydantic.fields import FieldInfo

from tools.docs_reference import sources
from tools.docs_reference.render import code, header, table

_PROBE = "\x00not-a-value"


def _models(base: type[Any]) -> Iterator[type[Any]]:
    for sub in base.__subclasses__():
        yield sub
        yield from _models(sub)


def _rule(info: FieldInfo) -> str:
    """What a value must be, in the words of the rule's own refusal ('is not ...')."""
    for meta in info.metadata:
        if isinstance(meta, BeforeValidator):
            try:
                meta.func(_PROBE)  # type: ignore[call-arg]
            except ValueError as err:
                return str(err).removeprefix("is not ")
    return "text"


def _default(info: FieldInfo) -> str:
    if info.default is None:
        return "unset"
    if isinstance(info.default, str):
        return code(info.default) if info.default else "empty"
    return code(info.default)


def modelled() -> list[tuple[str, str, str, str]]:
    """(variable, default, rule, model) for every field of every settings model."""
    for module in sources.SETTINGS_MODULES:
        assert module.__name__  # imported for its models
    rows = []
    for model in _models(sources.settings.EnvSettings):
        for info in model.model_fields.values():
            alias = info.validation_alias
            if isinstance(alias, str):
                where = f"{model.__module__}.{model.__qualname__}"
                rows.append((alias, _default(info), _rule(info), where))
    return sorted(rows)


def _name_arg(node: ast.Call) -> str | None:
    """The variable's name when `node` reads one: environ.get("X"), os.getenv("X"),
    settings.read(environ, "X", ...)."""
    func = node.func
    attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    owner = func.value if isinstance(func, ast.Attribute) else None
    owner_name = getattr(owner, "id", getattr(owner, "attr", ""))
    args = node.args
    if attr == "getenv" or (attr == "get" and "env" in str(owner_name).lower()):
        first = args[0] if args else None
    elif attr == "read" and len(args) >= 2:
        first = args[1]
    else:
        return None
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def _reads(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        name = None
        if isinstance(node, ast.Call):
            name = _name_arg(node)
        elif isinstance(node, ast.Subscript) and "environ" in ast.unparse(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                name = key.value
        if name and name.isupper():
            yield name


def read_directly() -> list[tuple[str, str]]:
    """(variable, modules) for variables read without a settings model."""
    known = {row[0] for row in modelled()}
    found: dict[str, set[str]] = {}
    for root in sources.package_roots():
        for module, path in sources.modules(root):
            for name in _reads(path):
                if name not in known:
                    found.setdefault(name, set()).add(module)
    return [
        (name, ", ".join(code(m) for m in sorted(mods))) for name, mods in sorted(found.items())
    ]


def page() -> str:
    return (
        header(
            "Environment variables", "the settings models and the modules that read the environment"
        )
        + "\nWhat each one does: [configuration](../configuration.md), and the page of the "
        "feature it sets. A blank value counts as unset. A policy field is overridden with "
        "`MESH_POLICY__<EDGE>__<SECTION>__<FIELD>` (e.g. "
        "`MESH_POLICY__GATEWAY_TO_PAYMENT__RETRY__MAX_ATTEMPTS=2`); a caller's "
        "`<CALLEE>_ADDR` (e.g. `PROFILE_ADDR`) names its dependency's replicas.\n"
        + "\n## Read through a settings model\n\nA bad value stops the service at start-up "
        "(exit 2), naming the variable and the rule.\n\n"
        + table(
            ("variable", "default", "a value must be", "model"),
            ((code(v), d, r, code(m)) for v, d, r, m in modelled()),
        )
        + "\n## Read directly\n\n"
        + table(("variable", "read in"), ((code(v), mods) for v, mods in read_directly()))
    )
