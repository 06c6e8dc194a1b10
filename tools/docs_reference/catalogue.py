"""docs/reference/catalogue.md: every experiment of the catalogue, loaded and checked as the
runner loads it, in the order the lesson builds."""

from __future__ import annotations

from tools.docs_reference import sources
from tools.docs_reference.render import cell, code, header, table


def page() -> str:
    loaded = sources.catalogue()
    index = table(
        ("#", "experiment", "title", "variants"),
        (
            (
                i,
                f"[{code(path.stem)}](#{path.stem})",
                exp.title,
                ", ".join(v.name for v in exp.variants),
            )
            for i, (path, exp) in enumerate(loaded, 1)
        ),
    )
    parts = [
        header(
            "The experiment catalogue",
            "`grpc_resilience_mesh/chaos/experiments/*.yaml`, loaded by the runner's loader",
        ),
        "\nRun one with `mesh chaos run NAME`, all with `mesh chaos run --all` (the order below: "
        "`lesson_order.py`). The file format: [the experiment file](../experiment-file.md).\n\n",
        index,
    ]
    for path, exp in loaded:
        parts.append(
            f"\n## {path.stem}\n\n**{cell(exp.title)}**\n\n"
            f"- hypothesis: {cell(exp.hypothesis)}\n"
            f"- lesson: {cell(exp.lesson) or '-'}\n"
            f"- variants: {', '.join(code(v.name) for v in exp.variants)}\n"
            f"- file: `grpc_resilience_mesh/chaos/experiments/{path.name}`\n"
        )
    return "".join(parts)
