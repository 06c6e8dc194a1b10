"""docs/reference/spans.md: span attributes (grpc_resilience_mesh.services.telemetry.names) and the
span events the services add, found by reading every `add_event(...)` call and resolving its
names."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from tools.docs_reference import sources
from tools.docs_reference.render import code, header, table

SHAPE = """
```
Recv.<service>.<Method>          SERVER, one per call received
└── Sent.<service>.<Method>      INTERNAL, one per logical outbound call (all its attempts)
    └── Attempt.<service>.<Method>   CLIENT, one per attempt; the callee's Recv. span hangs under it
```
"""


def _meanings() -> dict[str, tuple[str, str]]:
    """attribute -> (on which spans, meaning), from the table in names' docstring."""
    found: dict[str, tuple[str, str]] = {}
    for line in (sources.names.__doc__ or "").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0][:4] in ("rpc.", "mesh"):
            found[cells[0]] = (cells[1], cells[2])
    return found


def attributes() -> list[tuple[str, str, str]]:
    """(attribute, on, meaning) for every span attribute constant in names, in its order."""
    meanings = _meanings()
    rows = []
    for value in vars(sources.names).values():
        if isinstance(value, str) and value in meanings:
            rows.append((value, *meanings[value]))
    return rows


class _Resolver:
    """Turns `n.EV_X`, `n.EV_BREAKER[...]` and literals into the strings they name at run time."""

    def __init__(self, module: ModuleType, tree: ast.Module) -> None:
        self.module = module
        self.aliases = {
            a.asname or a.name: f"{node.module}.{a.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module
            for a in node.names
        }

    def values(self, node: ast.expr) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Subscript):
            whole = self._object(node.value)
            return sorted(str(v) for v in whole.values()) if isinstance(whole, dict) else []
        value = self._object(node)
        return [value] if isinstance(value, str) else []

    def _object(self, node: ast.expr) -> object:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = self.aliases.get(node.value.id)
            target = importlib.import_module(owner) if owner else None
            return getattr(target, node.attr, None)
        if isinstance(node, ast.Name):
            return getattr(self.module, node.id, None)
        return None


def _dict_keys(scope: ast.AST, var: str) -> list[ast.expr]:
    """The keys a function puts in its dict `var`: `var = {...}` and `var[KEY] = ...`."""
    keys: list[ast.expr] = []
    for node in ast.walk(scope):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        value = getattr(node, "value", None)
        for target in targets:
            if isinstance(target, ast.Name) and target.id == var and isinstance(value, ast.Dict):
                keys += [k for k in value.keys if k is not None]
            if (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and target.value.id == var
            ):
                keys.append(target.slice)
    return keys


def _event_call(node: ast.AST) -> ast.Call | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "add_event" and node.args:
            return node
    return None


def _calls(name: str, path: Path) -> Iterator[tuple[str, list[str], list[str]]]:
    """(module, event names, attribute names) of each add_event call in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    resolve = _Resolver(importlib.import_module(name), tree)
    scopes = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    seen: set[int] = set()
    for scope in scopes:
        for node in ast.walk(scope):
            call = _event_call(node)
            if call is None or id(call) in seen:
                continue
            seen.add(id(call))
            first = call.args[0]
            firsts = [first.body, first.orelse] if isinstance(first, ast.IfExp) else [first]
            events = [e for f in firsts for e in resolve.values(f)]
            keys: list[ast.expr] = []
            if len(call.args) > 1:
                second = call.args[1]
                if isinstance(second, ast.Dict):
                    keys = [k for k in second.keys if k is not None]
                elif isinstance(second, ast.Name):
                    keys = _dict_keys(scope, second.id)
            if events:
                yield name, events, [v for k in keys for v in resolve.values(k)]


def events() -> list[tuple[str, str, str]]:
    """(event, attributes, emitted in) for every named span event, sorted by event."""
    found: dict[str, tuple[set[str], set[str]]] = {}
    for name, path in sources.modules(sources.services_root()):
        if "add_event(" in path.read_text(encoding="utf-8"):
            for module, names, attrs in _calls(name, path):
                for event in names:
                    seen_attrs, seen_in = found.setdefault(event, (set(), set()))
                    seen_attrs.update(attrs)
                    seen_in.add(module)
    return [
        (event, ", ".join(sorted(a)) or "-", ", ".join(sorted(m)))
        for event, (a, m) in sorted(found.items())
    ]


def page() -> str:
    attrs = table(("attribute", "on", "meaning"), ((code(a), on, m) for a, on, m in attributes()))
    evs = table(
        ("event", "attributes", "added in"),
        ((code(e), a, ", ".join(code(m) for m in mods.split(", "))) for e, a, mods in events()),
    )
    return (
        header(
            "Spans and span events",
            "`grpc_resilience_mesh.services.telemetry.names` and every `add_event` call",
        )
        + "\nSpan shape, after gRFC A72 (how to read one: [observability](../observability.md)):\n"
        + SHAPE
        + "\n## Attributes\n\n"
        + attrs
        + "\n## Events\n\n"
        + evs
    )
