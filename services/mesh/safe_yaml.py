"""The one YAML loader: every policy, fault and experiment document goes through it, with limits.

PyYAML's `safe_load` refuses arbitrary objects but not resource attacks: 870 bytes of nested
aliases ("billion laughs") expand into a graph that anything walking it (pydantic, a deep merge,
a JSON dump) spends minutes and gigabytes on, and a few thousand nested brackets end in a
RecursionError. This loader caps, before anything is built:

- the document's size in bytes (`max_bytes`);
- its nesting depth (`max_depth`), counted through aliases as well;
- the number of nodes the document stands for once every alias is expanded (`max_nodes`), so
  anchors and aliases stay usable for what they are for (sharing an overrides block between
  two variants) but cannot multiply.

Every refusal is a `YamlError` (a ValueError) whose message names the document, and the line and
column where YAML says so; it never quotes the document's contents.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import Node
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

MAX_BYTES = 64 * 1024
"""Far above any policy (about 4 KB) or experiment (about 3 KB) the project ships."""
MAX_DEPTH = 32
"""A policy is 4 levels deep, an experiment 6."""
MAX_NODES = 20_000
"""Nodes after alias expansion; the largest shipped document has under 1,000."""


class YamlError(ValueError):
    """A YAML document that is malformed, or over one of the loader's limits."""


class _BoundedComposer(Composer):
    """Composer that counts depth and expanded nodes as it builds the node graph."""

    max_depth: int
    max_nodes: int

    def _init_bounds(self, max_depth: int, max_nodes: int) -> None:
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self._depth = 0
        self._expanded = 0
        self._anchor_size: dict[str, tuple[int, int]] = {}  # anchor -> (nodes, height)

    def _refuse(self, reason: str, event: Any) -> None:
        mark = event.start_mark
        raise YamlError(f"line {mark.line + 1}, column {mark.column + 1}: {reason}")

    def compose_node(self, parent: Node | None, index: Any) -> Node:  # type: ignore[override]
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            nodes, height = self._anchor_size.get(event.anchor, (1, 1))
            self._count(nodes, event)
            if self._depth + height > self.max_depth:
                self._refuse(f"nesting deeper than {self.max_depth} levels", event)
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        self._depth += 1
        if self._depth > self.max_depth:
            self._refuse(f"nesting deeper than {self.max_depth} levels", event)
        self._count(1, event)
        before = self._expanded
        node: Node = super().compose_node(parent, index)
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._anchor_size[anchor] = (self._expanded - before + 1, _height(node))
        self._depth -= 1
        return node

    def _count(self, nodes: int, event: Any) -> None:
        self._expanded += nodes
        if self._expanded > self.max_nodes:
            self._refuse(f"more than {self.max_nodes} nodes once aliases are expanded", event)


def _height(node: Node) -> int:
    """Levels below and including `node` (bounded: the composer has already capped depth)."""
    value = node.value
    if isinstance(value, list) and value:
        children = [c for pair in value for c in pair] if isinstance(value[0], tuple) else value
        return 1 + max(_height(c) for c in children)
    return 1


class _BoundedLoader(Reader, Scanner, Parser, _BoundedComposer, SafeConstructor, Resolver):
    """SafeLoader's parts, with the bounded composer."""

    def __init__(self, stream: str, max_depth: int, max_nodes: int) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._init_bounds(max_depth, max_nodes)


def load(
    source: str | bytes,
    name: str = "<yaml>",
    *,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
) -> Any:
    """Parse one YAML document within the limits; `name` (a file, a variable) leads every error."""
    size = len(source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source)
    if size > max_bytes:
        raise YamlError(f"{name}: {size} bytes, more than the {max_bytes} a document may have")
    if isinstance(source, bytes):
        try:
            text = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise YamlError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    else:
        text = source
    loader = _BoundedLoader(text, max_depth, max_nodes)
    try:
        return loader.get_single_data()
    except YamlError as exc:
        raise YamlError(f"{name}: {exc}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise YamlError(f"{name}: not valid YAML: {where}{exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"{name}: not valid YAML: {exc}") from None
    except RecursionError:
        raise YamlError(f"{name}: nesting too deep") from None
    finally:
        loader.dispose()


def load_file(path: str, **limits: int) -> Any:
    """Read and parse a file; a missing, oversized or undecodable file is a YamlError naming it."""
    max_bytes = limits.get("max_bytes", MAX_BYTES)
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise YamlError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return load(data, path, **limits)
