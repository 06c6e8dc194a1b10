"""Fail on a module over 400 lines or a function over 60, except today's, listed to shrink.

    python -m tools.code_shape [--update] [FOLDER ...]     (default: libs grpc_resilience_mesh
    embedded_toxiproxy loadgen bench tests tools)

A module's length is its line count less its declarative tables; a function's runs from its `def` to
its last line (a nested function counts in its parent too). Generated code
(grpc_resilience_mesh/services/v1) is skipped. A declarative table is data, not logic: an assignment
at module or class level (a pydantic Field, a tuple of rows), or a function of no arguments whose
body is one `return`, whose value is built only of literals, names, attributes, operators and calls
of those (`Peer(name=..., version=...)`): no comprehension, lambda or `await`. Its lines do not
count.

The allowlist (tools/code_shape_allowlist.txt) holds each of today's offenders with its current
length, and may only shrink. A new offender fails; so does a listed one that grew, or that shrank
(write its new length) or is now within bounds (remove it): the list stays exactly what is left
to split. `--update` rewrites the list downward only (lowers, removes; never adds or raises).
Exit status 1 on any failure, else 0.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
FOLDERS = ("libs", "grpc_resilience_mesh", "tests", "tools", "integrations", "examples")
GENERATED = ("grpc_resilience_mesh/services/v1",)
ALLOWLIST = Path("tools/code_shape_allowlist.txt")
MODULE = "-"  # the function column of a module's row

_DATA_LEAVES = (ast.Constant, ast.Name, ast.Attribute)
_DATA_NODES = (
    *_DATA_LEAVES,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.Dict,
    ast.Call,
    ast.keyword,
    ast.Starred,
    ast.UnaryOp,
    ast.BinOp,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.Subscript,
    ast.Slice,
    ast.Load,
    ast.operator,
    ast.unaryop,
)
Key = tuple[str, str]  # (path, function or MODULE)


@dataclass(frozen=True)
class Shape:
    """What one file measures: its counted lines and each function's length."""

    path: str
    lines: int
    functions: dict[str, int]


def is_data(node: ast.AST | None) -> bool:
    """True when the expression is built only of literals, names, attributes and calls."""
    return node is None or all(isinstance(n, _DATA_NODES) for n in ast.walk(node))


def is_table(node: ast.stmt) -> bool:
    """An assignment of data, or a function that only returns data (after its docstring)."""
    if isinstance(node, ast.Assign | ast.AnnAssign):
        return is_data(node.value)
    if isinstance(node, ast.FunctionDef) and not node.decorator_list and _no_args(node.args):
        body = node.body[1:] if _docstring(node.body[0]) else node.body
        return len(body) == 1 and isinstance(body[0], ast.Return) and is_data(body[0].value)
    return False


def _no_args(args: ast.arguments) -> bool:
    return not (args.posonlyargs or args.args or args.vararg or args.kwonlyargs or args.kwarg)


def _docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)


def _span(node: ast.stmt) -> int:
    return (node.end_lineno or node.lineno) - node.lineno + 1


def _table_lines(tree: ast.Module) -> int:
    """Lines of the tables at module level and in the bodies of module-level classes."""
    total = 0
    for node in tree.body:
        inner = node.body if isinstance(node, ast.ClassDef) else [node]
        total += sum(_span(child) for child in inner if is_table(child))
    return total


def _functions(body: Sequence[ast.stmt], prefix: str = "") -> Iterator[tuple[str, ast.stmt]]:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, node
            yield from _functions(node.body, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node.body, f"{prefix}{node.name}.")
        elif isinstance(node, ast.If | ast.Try | ast.With):
            inner = [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
            yield from _functions(inner, prefix)


def measure(path: Path, name: str) -> Shape:
    text = path.read_text()
    tree = ast.parse(text, name)
    functions: dict[str, int] = {}
    for qualname, node in _functions(tree.body):
        if not is_table(node):
            functions[qualname] = max(functions.get(qualname, 0), _span(node))
    return Shape(name, len(text.splitlines()) - _table_lines(tree), functions)


def offenders(root: Path, folders: Sequence[str]) -> dict[Key, int]:
    """(path, function or MODULE) -> length, for everything over its limit."""
    found: dict[Key, int] = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            name = path.relative_to(root).as_posix()
            if any(name.startswith(f"{g}/") for g in GENERATED):
                continue
            shape = measure(path, name)
            if shape.lines > MAX_MODULE_LINES:
                found[(name, MODULE)] = shape.lines
            for function, length in shape.functions.items():
                if length > MAX_FUNCTION_LINES:
                    found[(name, function)] = length
    return found


def read_allowlist(path: Path) -> dict[Key, int]:
    """`PATH FUNCTION LINES` rows (FUNCTION `-` for the module itself); # comments skipped."""
    allowed: dict[Key, int] = {}
    for number, line in enumerate(path.read_text().splitlines() if path.exists() else [], 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) != 3 or not fields[2].isdigit():
            raise ValueError(f"{path}:{number}: not `PATH FUNCTION LINES`: {line!r}")
        allowed[(fields[0], fields[1])] = int(fields[2])
    return allowed


def write_allowlist(path: Path, allowed: dict[Key, int]) -> None:
    rows = sorted(allowed.items(), key=lambda row: (-row[1], row[0]))
    lines = [
        "# Today's modules over 400 lines (function `-`) and functions over 60, to be split.",
        "# Checked by tools/code_shape.py (make lint): this list may only shrink.",
        *(f"{file} {function} {length}" for (file, function), length in rows),
    ]
    path.write_text("\n".join(lines) + "\n")


def problems(found: dict[Key, int], allowed: dict[Key, int]) -> list[str]:
    """Each way the tree and the allowlist disagree, one line each."""
    out = []
    for key in sorted(found.keys() | allowed.keys()):
        now, listed = found.get(key), allowed.get(key)
        what = _describe(key)
        if listed is None:
            out.append(f"{what}: {now} lines, over the limit of {_limit(key)}: split it")
        elif now is None:
            out.append(f"{what}: within bounds now: remove it from the allowlist")
        elif now > listed:
            out.append(f"{what}: grew from {listed} to {now} lines (limit {_limit(key)})")
        elif now < listed:
            out.append(f"{what}: shrank from {listed} to {now} lines: write {now} in the allowlist")
    return out


def shrunk(found: dict[Key, int], allowed: dict[Key, int]) -> dict[Key, int]:
    """The allowlist lowered to today's lengths, without the fixed; nothing added or raised."""
    return {key: min(n, found[key]) for key, n in allowed.items() if key in found}


def _describe(key: Key) -> str:
    return key[0] if key[1] == MODULE else f"{key[0]}: {key[1]}()"


def _limit(key: Key) -> int:
    return MAX_MODULE_LINES if key[1] == MODULE else MAX_FUNCTION_LINES


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.code_shape", description=__doc__)
    parser.add_argument("folders", nargs="*", default=list(FOLDERS))
    parser.add_argument("--root", type=Path, default=Path("."))
    parser.add_argument("--allowlist", type=Path, default=None)
    parser.add_argument("--update", action="store_true", help="shrink the allowlist to today's")
    args = parser.parse_args(argv)
    allowlist = args.allowlist or args.root / ALLOWLIST
    found, allowed = offenders(args.root, args.folders), read_allowlist(allowlist)
    if args.update:
        allowed = shrunk(found, allowed)
        write_allowlist(allowlist, allowed)
    failures = problems(found, allowed)
    for line in failures:
        print(f"code shape: {line}")
    print(f"{len(found)} module(s) and function(s) over their limits, {len(allowed)} allowed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
