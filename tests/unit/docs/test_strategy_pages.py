"""The strategy pages (docs/library/*.md): their option tables and pipeline order are the code's,
and their snippets run."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import grpc.aio
import pytest

from grpc_aio_resilience import PIPELINE_ORDER, RetryPolicy, option_rows
from tools.docs_reference import marked, sources
from tools.docs_reference.generate import main
from tools.docs_reference.sources import DOCS_ROOT

LIBRARY = DOCS_ROOT / "library"
PAGES = {page.stem: page.read_text(encoding="utf-8") for page in sorted(LIBRARY.glob("*.md"))}
SNIPPET = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)

STALE = """# Retry

Prose the generator leaves alone.

<!-- options: RetryPolicy -->
| option | type | default | range | why |
|---|---|---|---|---|
| `max_attempts` | int | `5` | [1, 10] | copied by hand, then the default changed |
<!-- /options -->

<!-- pipeline-order: throttle -->
bulkhead -> total deadline -> retry -> breaker -> attempt timeout -> wire
<!-- /pipeline-order -->

More prose.
"""


def test_committed_strategy_pages_are_current() -> None:
    stale = [str(p.relative_to(DOCS_ROOT)) for p in marked.stale_pages()]
    assert stale == [], f"regenerate with `python -m tools.docs_reference --write`: {stale}"


def test_a_stale_table_and_order_fail_the_check_and_write_fixes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "retry.md"
    page.write_text(STALE, encoding="utf-8")
    assert main(["--check"], out=tmp_path / "reference", docs=tmp_path) == 1
    assert f"stale: {page}" in capsys.readouterr().out

    assert main(["--write"], out=tmp_path / "reference", docs=tmp_path) == 0
    text = page.read_text(encoding="utf-8")
    assert marked.stale_pages(tmp_path) == []
    assert text.startswith("# Retry\n\nProse the generator leaves alone.\n\n")
    assert text.endswith("<!-- /pipeline-order -->\n\nMore prose.\n")
    assert "copied by hand" not in text
    for row in option_rows(RetryPolicy):
        assert f"| `{row.name}` | {row.kind} | `{row.default}` | {row.range} | {row.doc} |" in text
    assert "| `max_attempts` | int | `3` | [1, 10] |" in text
    order = " → ".join(f"**`{n}`**" if n == "throttle" else f"`{n}`" for n in PIPELINE_ORDER)
    assert f"\n{order} → wire\n" in text


def test_the_server_order_block_is_the_declared_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "SERVER_ORDER", ("streams", "shedding", "faults"))
    text = marked.fill("<!-- server-order: shedding -->\nstale\n<!-- /server-order -->\n")
    assert "\n`streams` → **`shedding`** → `faults` → the servicer\n" in text
    assert "stale" not in text


def test_a_field_list_keeps_those_fields_and_the_ones_under_them() -> None:
    table = marked.options_table(["ServerPolicy", "max_in_flight", "queue"])
    names = re.findall(r"^\| `([\w.]+)` \|", table, re.MULTILINE)
    assert names[0] == "max_in_flight"
    assert names[1:] and all(n.startswith("queue.") for n in names[1:])


@pytest.mark.parametrize(
    ("block", "error"),
    [
        ("<!-- options: NoSuchPolicy -->\n<!-- /options -->", "'NoSuchPolicy' is no options class"),
        ("<!-- options: RetryPolicy no_such -->\n<!-- /options -->", "RetryPolicy has no option"),
        ("<!-- pipeline-order: retries -->\n<!-- /pipeline-order -->", "not in PIPELINE_ORDER"),
        ("<!-- server-order: auth -->\n<!-- /server-order -->", "not in SERVER_ORDER"),
        ("<!-- options: RetryPolicy -->\nno closing mark\n", "without their closing mark"),
    ],
)
def test_a_block_the_generator_cannot_fill_names_the_page(block: str, error: str) -> None:
    with pytest.raises(marked.BlockError, match=re.escape(error)) as raised:
        marked.fill(f"# Page\n\n{block}\n", "library/page.md")
    assert str(raised.value).startswith("library/page.md: ")


def test_every_client_strategy_page_shows_where_it_sits_and_its_options() -> None:
    expected = {
        "bulkhead": "BulkheadPolicy",
        "deadline": "DeadlinePolicy",
        "hedging": "HedgingOptions",
        "retry": "RetryPolicy",
        "retry-budget": "RetryBudgetPolicy",
        "throttle": "ThrottlePolicy",
        "breaker": "BreakerPolicy",
        "outlier": "OutlierPolicy",
        "admission": "ServerPolicy",
        "stream-guard": "ServerPolicy",
    }
    for stem, cls in expected.items():
        assert f"<!-- options: {cls}" in PAGES[stem], stem
        if stem not in ("admission", "stream-guard"):
            assert "<!-- pipeline-order" in PAGES[stem], stem
    assert "no fallback strategy" in PAGES["fallback"]


@pytest.mark.parametrize("stem", PAGES)
async def test_the_snippets_run_through_the_face(stem: str) -> None:
    snippets = SNIPPET.findall(PAGES[stem])
    assert snippets, f"{stem}.md has no python snippet"
    for snippet in snippets:
        assert "grpc_aio_resilience." not in snippet.replace("grpc_aio_resilience import", "")
        names: dict[str, object] = {"__name__": f"snippet_{stem}"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a trap about the snippet's made-up service
            exec(compile(snippet, f"docs/library/{stem}.md", "exec"), names)
        for value in names.values():
            if isinstance(value, grpc.aio.Channel):
                await value.close()
