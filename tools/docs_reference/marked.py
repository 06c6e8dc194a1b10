"""Blocks the code writes inside hand-written pages (docs/library/*.md, the patterns' pages).

A page keeps its prose; between two marks the text is the generator's, rewritten by `--write`
and compared by `--check`, so a table cannot drift from the code it describes:

    <!-- options: RetryPolicy -->            every option of the class, nested ones dotted
    <!-- options: ServerPolicy max_in_flight limit -->   only those fields (and under them)
    <!-- /options -->
    <!-- pipeline-order: retry -->           PIPELINE_ORDER, that strategy in bold (or none)
    <!-- /pipeline-order -->
    <!-- server-order: shedding -->          the mesh's SERVER_ORDER, that slot in bold (or none)
    <!-- /server-order -->
    <!-- signature: insecure_channel -->     a face name's signature and docstring
    <!-- /signature -->
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from pathlib import Path

from tools.docs_reference import sources
from tools.docs_reference.render import code, table

BLOCK = re.compile(
    r"<!-- (?P<kind>options|pipeline-order|server-order|signature)(?::(?P<args>[^>]*?))? -->\n"
    r"(?P<body>.*?)<!-- /(?P=kind) -->",
    re.DOTALL,
)
OPENING = re.compile(r"<!-- (?:options|pipeline-order|server-order|signature)\b")


class BlockError(ValueError):
    """A block the generator cannot fill: no closing mark, an unknown class, field or strategy."""


def options_table(args: Sequence[str]) -> str:
    """The options of class `args[0]` (restricted to the fields `args[1:]`, if any): name,
    type, default, range and why, from `grpc_aio_resilience.options.option_rows`."""
    if not args:
        raise BlockError("an options block names its class: <!-- options: RetryPolicy -->")
    try:
        rows = sources.option_rows(sources.option_class(args[0]))
    except ValueError as err:
        raise BlockError(str(err)) from None
    fields = tuple(args[1:])
    if fields:
        unknown = [f for f in fields if not any(_under(r.name, f) for r in rows)]
        if unknown:
            raise BlockError(f"{args[0]} has no option {', '.join(unknown)}")
        rows = [r for r in rows if any(_under(r.name, f) for f in fields)]
    return table(
        ("option", "type", "default", "range", "what it does, and why"),
        ((code(r.name), r.kind.replace("\\|", "|"), code(r.default), r.range, r.doc) for r in rows),
    )


def _under(name: str, field: str) -> bool:
    return name == field or name.startswith(f"{field}.")


def pipeline_order(args: Sequence[str]) -> str:
    """The library's PIPELINE_ORDER outermost first, `args[0]` (if given) in bold."""
    order = sources.PIPELINE_ORDER
    mark = args[0] if args else ""
    if mark and mark not in order:
        raise BlockError(f"{mark!r} is not in PIPELINE_ORDER {order}")
    names = [f"**{code(n)}**" if n == mark else code(n) for n in order]
    return " → ".join([*names, "wire"]) + "\n"


def server_order(args: Sequence[str]) -> str:
    """The mesh's SERVER_ORDER outermost first, `args[0]` (if given) in bold."""
    order = sources.SERVER_ORDER
    mark = args[0] if args else ""
    if mark and mark not in order:
        raise BlockError(f"{mark!r} is not in SERVER_ORDER {order}")
    names = [f"**{code(n)}**" if n == mark else code(n) for n in order]
    return " → ".join([*names, "the servicer"]) + "\n"


def signature(args: Sequence[str]) -> str:
    """`args[0]`, a name on the library's face: its signature as written (annotations as in the
    source) and its docstring, so the reference cannot drift from the code."""
    import grpc_aio_resilience

    if len(args) != 1 or args[0] not in grpc_aio_resilience.__all__:
        raise BlockError(f"a signature block names one name of the face, not {' '.join(args)!r}")
    target = getattr(grpc_aio_resilience, args[0])
    function = target.__init__ if inspect.isclass(target) else target
    params = []
    star = False
    for p in inspect.signature(function).parameters.values():
        if p.name == "self":
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            params.append("*")
            star = True
        text = p.name if p.annotation is p.empty else f"{p.name}: {p.annotation}"
        params.append(text if p.default is p.empty else f"{text} = {p.default!r}")
    returns = inspect.signature(function).return_annotation
    tail = "" if inspect.isclass(target) or returns is inspect.Signature.empty else f" -> {returns}"
    kind = (
        "class"
        if inspect.isclass(target)
        else "async def"
        if inspect.iscoroutinefunction(target)
        else "def"
    )
    head = f"{kind} {args[0]}(\n" + "".join(f"    {p},\n" for p in params) + f"){tail}"
    doc = inspect.getdoc(target) or ""
    return f"```python\n{head}\n```\n\n{doc}\n"


def fill(text: str, where: str = "") -> str:
    """`text` with every block rewritten from the code; BlockError names `where`."""
    found = len(OPENING.findall(text))
    closed = len(BLOCK.findall(text))
    if found != closed:
        raise BlockError(f"{where}: {found - closed} block(s) without their closing mark")

    def filled(match: re.Match[str]) -> str:
        kind, args = match["kind"], (match["args"] or "").split()
        try:
            makers = {
                "options": options_table,
                "pipeline-order": pipeline_order,
                "server-order": server_order,
            }
            body = makers.get(kind, signature)(args)
        except BlockError as err:
            raise BlockError(f"{where}: {err}") from None
        opening = match.group(0).split("\n", 1)[0]
        return f"{opening}\n\n{body}\n<!-- /{kind} -->"

    return BLOCK.sub(filled, text)


def pages(root: Path = sources.DOCS_ROOT) -> dict[Path, str]:
    """Every page under `root` holding a block, as the generator would write it now."""
    texts = {path: path.read_text(encoding="utf-8") for path in sorted(root.rglob("*.md"))}
    return {
        path: fill(text, str(path.relative_to(root)))
        for path, text in texts.items()
        if OPENING.search(text)
    }


def stale_pages(root: Path = sources.DOCS_ROOT) -> list[Path]:
    """The pages whose blocks differ from what the code says now."""
    return [path for path, text in pages(root).items() if path.read_text(encoding="utf-8") != text]
