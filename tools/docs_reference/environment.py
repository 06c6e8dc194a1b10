"""docs/reference/environment.md: every variable the code reads, from its one declaration (a
`grpc_resilience_mesh.services.settings.Var`): its default, the rule its value must follow
(stated by the rule's own error message) and what it does. Declaring modules are found by
reading the source, so a module moved or added is listed without touching this file; a
variable read any other way (the environment read itself, even under a declared name) is listed
apart, and the reference test fails on it. The embedded Toxiproxy, which may not import
grpc_resilience_mesh.services.settings, parses its own variables: the page names them."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from tools.docs_reference import sources
from tools.docs_reference.render import code, header, table

_PROBE = "\x00not-a-value"
_DECLARES = ("settings.Var(", "V = settings.Var")
_DECLARERS = ("settings.Var", "Var", "V")
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
    packages = tuple(sources.package_name(root) + "." for root in sources.package_roots())
    for var in sources.settings.declared():
        if var.module.startswith(packages):  # not a test's own
            rows.append((var.name, _default(var.default), _refusal(var.rule), var.help, var.module))
    return sorted(rows)


OWN_PARSERS = {"embedded_toxiproxy": "The embedded Toxiproxy, a package of its own,"}
"""Packages that parse their own variables, and how the page names them: the embedded Toxiproxy may
import nothing else of the project (an import-linter contract),
grpc_resilience_mesh.services.settings included."""
Constants = dict[str, str]
"""A module's names for variable names: NAME = "TEXT" and V = settings.Var("TEXT", ...) (as
`V.name`), its own and those it imports from another scanned module."""


def _raw_owner(owner: ast.expr, *, named_env: bool) -> bool:
    """`owner` is the environment: os.environ, (os.environ if e is None else e), or (with
    `named_env`, for .get) any name with env in it: env, environ, self.env."""
    last = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
    return "environ" in ast.unparse(owner) or (named_env and "env" in last.lower())


def _own_constants(tree: ast.Module, imported: Constants | None = None) -> Constants:
    """NAME = "TEXT" as NAME, and V = settings.Var(NAME or "TEXT", ...) as V.name."""
    found: Constants = dict(imported or {})
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if not isinstance(target, ast.Name) or value is None:
            continue
        key = target.id
        if isinstance(value, ast.Call) and ast.unparse(value.func) in _DECLARERS and value.args:
            key, value = f"{target.id}.name", value.args[0]
        name = _name(value, found)
        if name is not None:
            found[key] = name
    return found


def _constants(tree: ast.Module, project: dict[str, Constants]) -> Constants:
    """The module's own constants, and those it imports by name from a scanned module."""
    found: Constants = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in project:
            for alias in node.names:
                for key, name in project[node.module].items():
                    head, dot, attr = key.partition(".")
                    if head == alias.name:
                        found[f"{alias.asname or head}{dot}{attr}"] = name
    return _own_constants(tree, found)


def _name(node: ast.expr | None, constants: Constants) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return constants.get(ast.unparse(node)) if node is not None else None


def _read(node: ast.AST, constants: Constants) -> tuple[str | None, bool]:
    """(the variable `node` reads, whether it reads the environment itself). Itself:
    environ.get(X), os.getenv(X), environ[X]; through the settings: settings.read(environ, X,
    ...) and a typer option's envvar=X, whose names must be declared."""
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else func.id
        first = node.args[0] if node.args else None
        env_get = isinstance(func, ast.Attribute) and _raw_owner(func.value, named_env=True)
        if attr == "getenv" or (attr == "get" and env_get):
            return _name(first, constants), True
        if attr == "read" and len(node.args) >= 2:
            return _name(node.args[1], constants), False
    elif isinstance(node, ast.keyword) and node.arg == "envvar":
        return _name(node.value, constants), False
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        if _raw_owner(node.value, named_env=False):
            return _name(node.slice, constants), True
    return None, False


def _reads(tree: ast.Module, constants: Constants) -> Iterator[tuple[str, bool]]:
    for node in ast.walk(tree):
        name, raw = _read(node, constants)
        if name and name.isupper():
            yield name, raw


def _all_reads(roots: Sequence[Path]) -> Iterator[tuple[str, str, bool]]:
    """(module, variable, read raw?) for every read in the packages under `roots`."""
    trees = {
        module: ast.parse(path.read_text(encoding="utf-8"))
        for root in roots
        for module, path in sources.modules(root)
    }
    project = {module: _own_constants(tree) for module, tree in trees.items()}
    for module, tree in trees.items():
        for name, raw in _reads(tree, _constants(tree, project)):
            yield module, name, raw


def read_directly(roots: Sequence[Path] | None = None) -> list[tuple[str, str]]:
    """(variable, modules) read other than through a declaration: every read of the
    environment itself (declared or not: it skips the Var's rule and its start-up refusal), and a
    name given to settings.read or a typer envvar that no Var declares. `roots`: the project's
    packages and integrations, but those in OWN_PARSERS."""
    if roots is None:
        roots = [r for r in sources.scanned_roots() if r.name not in OWN_PARSERS]
    known = {row[0] for row in modelled()}
    found: dict[str, set[str]] = {}
    for module, name, raw in _all_reads(roots):
        if raw or name not in known:
            found.setdefault(name, set()).add(module)
    return [
        (name, ", ".join(code(m) for m in sorted(mods))) for name, mods in sorted(found.items())
    ]


def own_parsers() -> str:
    """What OWN_PARSERS' packages read, as the page says it."""
    said = []
    for root in sources.scanned_roots():
        if root.name in OWN_PARSERS:
            names = sorted({name for _, name, raw in _all_reads([root]) if raw})
            if names:
                said.append(f"{OWN_PARSERS[root.name]} reads {_listed(names)}.")
    return " ".join(said)


def _listed(names: Sequence[str]) -> str:
    shown = [code(n) for n in names]
    return ", ".join(shown[:-1]) + f" and {shown[-1]}" if len(shown) > 1 else shown[0]


def page() -> str:
    direct = read_directly()
    return (
        header(
            "Environment variables",
            "the variables' declarations (`grpc_resilience_mesh.services.settings`)",
        )
        + "\nWhat each one does in more words: [configuration](../configuration.md), and the "
        "page of the feature it sets. A blank value counts as unset. A policy field is "
        "overridden with `MESH_POLICY__<EDGE>__<SECTION>__<FIELD>` (e.g. "
        "`MESH_POLICY__GATEWAY_TO_PAYMENT__RETRY__MAX_ATTEMPTS=2`); a caller's "
        "`<CALLEE>_ADDR` (e.g. `PROFILE_ADDR`) names its dependency's replicas. "
        + own_parsers()
        + "\n"
        + "\nA bad value stops a service at start-up (exit 2), and a `mesh` command (exit 2), "
        "with one line naming the variable and the rule.\n\n"
        + table(
            ("variable", "default", "a value must be", "what it does", "declared in"),
            ((code(v), d, r, h, code(m)) for v, d, r, h, m in modelled()),
        )
        + (
            "\n## Read other than through a declaration\n\n"
            + table(("variable", "read in"), ((code(v), mods) for v, mods in direct))
            if direct
            else ""
        )
    )
