"""Fail on any import cycle spanning files of the given packages, and print each one.

    python -m tools.import_cycles services/mesh=mesh chaos=chaos

Each argument maps a folder to the package name it installs as. The graph has one node per module
(a package is its __init__) and an edge for every absolute or relative import of another module of
those packages, at module level or inside a function (a lazy import still ties the two files
together), and imports under `if TYPE_CHECKING:` too: they never run, but a cycle hidden behind
one is still two modules that cannot be read apart (a Protocol names what one needs of the
other). `from p import x`
points at p.x when that is a module, else at p. Exit status 1 when a cycle exists, else 0.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

Graph = dict[str, set[str]]


def modules(folder: Path, package: str) -> dict[str, Path]:
    """Module name -> file, for every .py file under folder."""
    found = {}
    for path in sorted(folder.rglob("*.py")):
        parts = [package, *path.relative_to(folder).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, known: Iterable[str]) -> set[str]:
    """The known modules that module `name` (at path) imports."""
    known = set(known)
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")[: len(name.split(".")) - node.level + is_package]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in known else base)
    edges = set()
    for target in targets:
        while target and target not in known:  # `import a.b.c` of a name inside a.b
            target = target.rpartition(".")[0]
        if target and target != name:
            edges.add(target)
    return edges


def graph(roots: dict[Path, str]) -> Graph:
    files: dict[str, Path] = {}
    for folder, package in roots.items():
        files.update(modules(folder, package))
    return {name: imports_of(name, path, files) for name, path in files.items()}


def cycles(g: Graph) -> list[list[str]]:
    """One cycle (a closed path, first node repeated last) per strongly connected component of
    more than one module (Tarjan's algorithm, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(g.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(_a_cycle_in(g, c) for c in components)


def _a_cycle_in(g: Graph, component: set[str]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first search)."""
    start = min(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(g[node] & component):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is in a component but on no cycle")


def main(argv: list[str]) -> int:
    if not argv or any("=" not in arg for arg in argv):
        print("usage: python -m tools.import_cycles FOLDER=PACKAGE ...", file=sys.stderr)
        return 2
    roots = {Path(folder): package for folder, package in (a.split("=", 1) for a in argv)}
    g = graph(roots)
    found = cycles(g)
    for cycle in found:
        print("import cycle: " + " -> ".join(cycle))
    print(f"{len(found)} import cycle(s) among {len(g)} modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
