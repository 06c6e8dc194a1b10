"""docs/reference/environment.md: every variable the code reads, from its one declaration (a
`mesh.settings.Var`): its default, the rule its value must follow
(stated by the rule's own error message) and what it does. Declaring modules are found by
reading the source, so a module moved or added is listed without touching this file; a
variable read any other way is listed apart, and the reference test fails on it."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Iterator
from pathlib import Path

from tools.docs_reference import sources
from tools.docs_reference.render import code, header, table

_PROBE = "\x00not-a-value"
_DECLARES = ("settings.Var(", "V = settings.Var")
Row = tuple[str, str, str, str, str]
"""(variable, default, a value must be, what it does, declared in)."""


def _refusal(parse: Callable[[str], object]) -> str:
    """What a value must be, in the words of the rule's own refusal ('is not ...')."""
    try:
        parse(_PROBE)
    except ValueError as err:
        return str(err).removeprefix("is not ")
    return "text"


def _default(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return code("on" if value else "off")
    if isinstance(value, str):
        return code(value) if value else "empty"
    return code(value)


def declaring_modules() -> list[str]:
    """Every project module that declares a variable, imported (which registers its Vars)."""
    found = []
    for root in sources.package_roots():
        for module, path in sources.modules(root):
            if any(mark in path.read_text(encoding="utf-8") for mark in _DECLARES):
                importlib.import_module(module)
                found.append(module)
    return found


def modelled() -> list[Row]:
    """Every declared Var."""
    declaring_modules()
    rows = []
    packages = {root.name for root in sources.package_roots()}
    for var in sources.settings.declared():
        if var.module.partition(".")[0] in packages:  # not a test's own
            rows.append((var.name, _default(var.default), _refusal(var.rule), var.help, var.module))
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
        elif isinstance(node, ast.keyword) and node.arg == "envvar":
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                name = node.value.value
        elif isinstance(node, ast.Subscript) and "environ" in ast.unparse(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                name = key.value
        if name and name.isupper():
            yield name


def read_directly() -> list[tuple[str, str]]:
    """(variable, modules) for variables read without a declaration."""
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
    direct = read_directly()
    return (
        header("Environment variables", "the variables' declarations (`mesh.settings`)")
        + "\nWhat each one does in more words: [configuration](../configuration.md), and the "
        "page of the feature it sets. A blank value counts as unset. A policy field is "
        "overridden with `MESH_POLICY__<EDGE>__<SECTION>__<FIELD>` (e.g. "
        "`MESH_POLICY__GATEWAY_TO_PAYMENT__RETRY__MAX_ATTEMPTS=2`); a caller's "
        "`<CALLEE>_ADDR` (e.g. `PROFILE_ADDR`) names its dependency's replicas. The embedded "
        "Toxiproxy, a package of its own, reads `MESH_TOXIPROXY_TOKEN` and `MESH_PROXY_LOOP`.\n"
        + "\nA bad value stops a service at start-up (exit 2), and a `mesh` command (exit 2), "
        "with one line naming the variable and the rule.\n\n"
        + table(
            ("variable", "default", "a value must be", "what it does", "declared in"),
            ((code(v), d, r, h, code(m)) for v, d, r, h, m in modelled()),
        )
        + (
            "\n## Read without a declaration\n\n"
            + table(("variable", "read in"), ((code(v), mods) for v, mods in direct))
            if direct
            else ""
        )
    )
