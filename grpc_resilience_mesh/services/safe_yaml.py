"""The one YAML loader: every policy, fault and experiment document goes through it, with limits.

PyYAML's `safe_load` refuses arbitrary objects but not resource attacks: 870 bytes of nested
aliases ("billion laughs") expand into a graph that anything walking it (pydantic, a deep merge,
a JSON dump) spends minutes and gigabytes on, and a few thousand nested brackets end in a
RecursionError. This loader caps, before anything is built:

- the document's size in bytes (`max_bytes`);
- its nesting depth (`max_depth`): flow brackets and block indentation as they are scanned (so
  10,000 `[` cost the scan of 33, not of all of them), then nodes, counted through aliases;
- the number of nodes the document stands for once every alias is expanded (`max_nodes`), so
  anchors and aliases stay usable for what they are for (sharing an overrides block between
  two variants) but cannot multiply. An alias inside the node it names (a cycle) is refused.

It also refuses a key written twice in one mapping (PyYAML would keep the last silently).

Every refusal is a `YamlError` (a ValueError) whose message names the document, and the line and
column where YAML says so; it never quotes the document beyond a short key, tag or anchor name.
"""

from __future__ import annotations

import copy
import functools
import re
from typing import Any, NoReturn

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

MAX_BYTES = 64 * 1024
"""Far above any policy (about 4 KB) or experiment (about 3 KB) the project ships."""
MAX_DEPTH = 32
"""A policy is 5 levels deep (scalars included), an experiment 7."""
MAX_NODES = 20_000
"""Nodes after alias expansion; the largest shipped document has under 1,000."""
QUOTE_CHARS = 40
"""Longest key, tag or anchor name an error message repeats."""
REMEMBERED = 256
"""Documents whose parse is kept: the catalogue asks for the same policy texts over and over
(a preset, its dump, each variant's overrides: about 190 parses of some 80 texts per load of
its 21 experiments, 2.8 s of pure-Python YAML), so a text parsed once is copied after."""
REMEMBERED_BYTES = 16 * 1024
"""Only documents up to this size are kept (shipped ones are under 5 KB): 256 of them are at
most 4 MB of text and a graph of about the same size."""

_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlError(ValueError):
    """A YAML document that is malformed, or over one of the loader's limits."""


def short(text: object, limit: int = QUOTE_CHARS) -> str:
    """`text` as a message may quote it: one line, at most `limit` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


class _BoundedLoader(Reader, Scanner, Parser, Composer, SafeConstructor, Resolver):
    """SafeLoader's parts; the scanner and the composer count depth and expanded nodes."""

    def __init__(self, stream: str, max_depth: int, max_nodes: int) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self._depth = 0
        self._deepest = 0
        self._expanded = 0
        self._open_anchors: set[str] = set()
        self._anchor_size: dict[str, tuple[int, int]] = {}  # anchor -> (nodes, height)

    # Scanner: each flow level and each block indentation level opens one collection, so their
    # sum is a lower bound of the node depth the composer would see; refusing here is never
    # too strict, and it happens before PyYAML scans ahead through every bracket.

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        self._check_scan_depth(self.flow_level + 1 + len(self.indents))
        super().fetch_flow_collection_start(token_class)

    def add_indent(self, column: int) -> bool:
        added = super().add_indent(column)
        if added:
            self._check_scan_depth(self.flow_level + len(self.indents))
        return added

    def _check_scan_depth(self, levels: int) -> None:
        if levels > self.max_depth:
            self._refuse(f"nesting deeper than {self.max_depth} levels", self.get_mark())

    # Composer: depth and expanded size, through aliases.

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, AliasEvent):
            return self._compose_alias(parent, index, event)
        self._depth += 1
        if self._depth > self.max_depth:
            self._refuse(f"nesting deeper than {self.max_depth} levels", event.start_mark)
        self._count(1, event.start_mark)
        outer_deepest, self._deepest = self._deepest, self._depth
        before = self._expanded
        anchor: str | None = getattr(event, "anchor", None)
        if anchor is not None:
            self._open_anchors.add(anchor)
        node = super().compose_node(parent, index)
        if anchor is not None:
            self._open_anchors.discard(anchor)
            height = self._deepest - self._depth + 1
            self._anchor_size[anchor] = (self._expanded - before + 1, height)
        self._deepest = max(outer_deepest, self._deepest)
        self._depth -= 1
        return node

    def _compose_alias(self, parent: Node | None, index: Any, event: AliasEvent) -> Node | None:
        anchor = event.anchor or ""
        if anchor in self._open_anchors:
            self._refuse(f"alias *{short(anchor)} inside the node it names", event.start_mark)
        nodes, height = self._anchor_size.get(anchor, (1, 1))  # undefined: PyYAML says so
        self._count(nodes, event.start_mark)
        reach = self._depth + height
        if reach > self.max_depth:
            self._refuse(f"nesting deeper than {self.max_depth} levels", event.start_mark)
        self._deepest = max(self._deepest, reach)
        return super().compose_node(parent, index)

    def compose_mapping_node(self, anchor: Any) -> MappingNode:
        node = super().compose_mapping_node(anchor)
        seen: set[tuple[str, str]] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, ScalarNode) and key_node.tag != _MERGE_TAG:
                key = (key_node.tag, key_node.value)
                if key in seen:
                    self._refuse(f"duplicate key {short(key_node.value)!r}", key_node.start_mark)
                seen.add(key)
        return node

    def _count(self, nodes: int, mark: Any) -> None:
        self._expanded += nodes
        if self._expanded > self.max_nodes:
            self._refuse(f"more than {self.max_nodes} nodes once aliases are expanded", mark)

    @staticmethod
    def _refuse(reason: str, mark: Any) -> NoReturn:
        raise YamlError(f"{_at(mark)}{reason}")


def load(
    source: str | bytes,
    name: str = "<yaml>",
    *,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
) -> Any:
    """Parse one YAML document within the limits; `name` (a file, a variable) leads every error."""
    if len(source) > max_bytes:  # every character is at least one byte
        size = len(source)
    else:
        size = len(source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source)
    if size > max_bytes:
        raise YamlError(f"{name}: more than the {max_bytes} bytes a document may have")
    if isinstance(source, bytes):
        try:
            text = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise YamlError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    else:
        text = source
    try:
        if size > REMEMBERED_BYTES:
            return _parse(text, max_depth, max_nodes)
        # A copy: callers change what they get (setdefault, merges); aliases stay shared in it.
        return copy.deepcopy(_remembered(text, max_depth, max_nodes))
    except YamlError as exc:
        raise YamlError(f"{name}: {exc}") from None
    except yaml.reader.ReaderError as exc:
        char = f"#x{exc.character:04x}" if isinstance(exc.character, int) else "a character"
        raise YamlError(f"{name}: not valid YAML: {char} at character {exc.position}") from None
    except yaml.MarkedYAMLError as exc:
        raise YamlError(f"{name}: not valid YAML: {_describe(exc)}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"{name}: not valid YAML: {short(exc, 120)}") from None
    except (ValueError, OverflowError) as exc:
        # A scalar that resolves to a type but cannot be built: a 5,000-digit int, 2001-02-30.
        raise YamlError(f"{name}: a value YAML cannot represent: {short(exc, 80)}") from None
    except RecursionError:
        raise YamlError(f"{name}: nesting too deep") from None


def _parse(text: str, max_depth: int, max_nodes: int) -> Any:
    loader = _BoundedLoader(text, max_depth, max_nodes)  # the Reader checks characters
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


_remembered = functools.lru_cache(maxsize=REMEMBERED)(_parse)
"""`_parse`, kept for the last REMEMBERED texts that parsed (a refusal is not kept: it raises
again, as the first time)."""


def _describe(exc: yaml.MarkedYAMLError) -> str:
    """`line L, column C: <context>: <problem>`, each part short (tags and anchors are quoted)."""
    mark = exc.problem_mark or exc.context_mark
    parts = [short(p, 120) for p in (exc.context, exc.problem) if p]
    return _at(mark) + ": ".join(parts)


def load_file(path: str, **limits: int) -> Any:
    """Read and parse a file; a missing, oversized or undecodable file is a YamlError naming it."""
    max_bytes = limits.get("max_bytes", MAX_BYTES)
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise YamlError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return load(data, path, **limits)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def foreign_keys(document: dict[Any, Any]) -> str | None:
    """Where a mapping holds a key that is not a name, else None: the first mapping (the top
    level, or the dotted path of names to it) with a key no configuration of ours uses.

    A policy or an experiment names everything it holds (edges, services, fields); a file whose
    keys are `root:*:19000:0:99999:7::` is some other file that happens to parse as a mapping,
    and its keys are its contents: say what it is not, never quote them."""
    pending: list[tuple[str, Any]] = [("the top level", document)]
    while pending:
        where, node = pending.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(node, dict) and not (isinstance(key, str) and _NAME.fullmatch(key)):
                return where
            if isinstance(value, dict | list):
                path = str(key) if where == "the top level" else f"{where}.{key}"
                pending.append((path, value))
    return None


def not_a(document: dict[Any, Any], what: str, examples: str) -> str | None:
    """Why `document` is not a `what` (a policy, an experiment) when its keys are not names,
    saying where without quoting any of them; None when every key is a name."""
    where = foreign_keys(document)
    if where is None:
        return None
    return (
        f"not {what}: {where} has keys that are not names (the keys of {what} are names "
        f"such as {examples}); the file is not shown"
    )
