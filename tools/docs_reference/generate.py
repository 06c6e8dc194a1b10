"""Write docs/reference/ and the generated blocks of the hand-written pages (`--write`), or exit 1
naming every page that differs from what the code says now (`--check`; the test suite runs the
same comparison)."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from pathlib import Path

from tools.docs_reference import (
    catalogue,
    environment,
    marked,
    metrics,
    scenario_params,
    sources,
    spans,
)

PAGES: dict[str, Callable[[], str]] = {
    "metrics.md": metrics.page,
    "spans.md": spans.page,
    "environment.md": environment.page,
    "catalogue.md": catalogue.page,
    "scenario-params.md": scenario_params.page,
}


@functools.cache
def _texts() -> tuple[tuple[str, str], ...]:
    """Every page's text, made once per process (the code does not change under it)."""
    return tuple((name, make()) for name, make in PAGES.items())


def pages(out: Path = sources.DOCS) -> dict[Path, str]:
    return {out / name: text for name, text in _texts()}


def stale_pages(out: Path = sources.DOCS) -> list[Path]:
    """The pages whose committed text differs from what the generators write now."""
    return [
        path
        for path, text in pages(out).items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]


def _shown(path: Path) -> str:
    return str(path.relative_to(sources.ROOT)) if path.is_relative_to(sources.ROOT) else str(path)


def main(argv: list[str] | None = None, out: Path | None = None, docs: Path | None = None) -> int:
    """`out`: where the reference pages go; `docs`: the pages whose marked blocks are filled."""
    parser = argparse.ArgumentParser(prog="python -m tools.docs_reference", description=__doc__)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--write", action="store_true", help="rewrite docs/reference/*.md and the marked blocks"
    )
    mode.add_argument("--check", action="store_true", help="exit 1 if a page is stale")
    args = parser.parse_args(argv)
    out = sources.DOCS if out is None else out
    docs = sources.DOCS_ROOT if docs is None else docs
    if args.write:
        out.mkdir(parents=True, exist_ok=True)
        for path, text in pages(out).items():
            path.write_text(text, encoding="utf-8")
            print(f"wrote {_shown(path)}")
        for path, text in marked.pages(docs).items():
            if path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
                print(f"filled {_shown(path)}")
        return 0
    stale = stale_pages(out) + marked.stale_pages(docs)
    for path in stale:
        print(f"stale: {_shown(path)} (python -m tools.docs_reference --write)")
    return 1 if stale else 0
