"""`reports/index.html`: one static page (no script, no CDN) that links every experiment's
report, tables, plots and trace ids, so the whole demo can be browsed from one place.

Experiments come in the catalogue's lesson order
(grpc_resilience_mesh/chaos/experiment/lesson_order.py), under a summary of which held and what each
miss missed (grpc_resilience_mesh/chaos/report/index_summary.py). It is rebuilt from what is on disk
(`<reports>/<experiment>/result.json`, `report.md`, `*.png`) after each experiment, so an
interrupted run still has an index of what finished.
"""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from grpc_resilience_mesh.chaos.experiment.lesson_order import lesson_rank
from grpc_resilience_mesh.chaos.report.index_summary import missed_of, summary, verdict_mark

INDEX = "index.html"
_STYLE = """
body { font-family: sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; }
table.summary td, table.summary th { padding: .1rem .6rem; text-align: left; vertical-align: top; }
section { border-top: 1px solid #ccc; padding-top: .5rem; }
.held { color: #1a7f37; } .failed { color: #cf222e; } .partial { color: #9a6700; }
pre { font-size: .75rem; background: #f6f8fa; padding: .5rem; overflow-x: auto; }
img { max-width: 100%; border: 1px solid #ddd; margin: .3rem 0; } code { font-size: .8rem; }
"""


def report_folder(reports: Path, experiment: str) -> Path:
    """`<reports>/<name>` for an experiment named after its file: the name keeps letters,
    digits, `_`, `-` and inner dots (anything else becomes `_`, leading dots too), so a file
    named `...yaml` or `a/../b.yaml` writes inside `reports/`, never beside it."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", experiment)[:100]
    name = re.sub(r"^\.", "_", name) or "_"
    folder = reports / name
    if folder.resolve().parent != reports.resolve():  # belt and braces for the rule above
        raise ValueError(f"report folder {name!r} is not inside {reports}")
    return folder


def report_owner(folder: Path) -> str | None:
    """The experiment whose report `folder` holds (its result.json's `name`; `""` where that
    names none), or None where it holds no report that can be read."""
    try:
        data = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else ""


def claim_folder(reports: Path, experiment: str, file: str, claimed: dict[str, str]) -> Path:
    """`report_folder`, unless another experiment's report is there: one claimed earlier in
    this run (`claimed`: folder name -> `file`, the experiment file's resolved path), or one
    on disk under another name. Then the first of `<folder>-2`, `-3`, ... that none holds.
    Names that reduce alike (`a b`, `a_b`), or one stem in two folders, never overwrite each
    other; the same experiment run again, or run `--repeat` times, keeps its folder."""
    base = folder = report_folder(reports, experiment)
    n = 1
    while True:
        if folder.name in claimed:
            free = claimed[folder.name] == file
        else:
            free = report_owner(folder) in (None, experiment)
        if free:
            claimed[folder.name] = file
            return folder
        n += 1
        folder = base.with_name(f"{base.name}-{n}")


def _href(*parts: str) -> str:
    """A relative link to a file under `reports/`, each part percent-encoded: a `:` becomes
    `%3A`, so no folder name can make it a `javascript:` (or any other scheme) URL."""
    return escape("/".join(quote(p, safe="") for p in parts))


def write_index(reports: Path, state_dir: Path | None = None) -> Path:
    """Write `<reports>/index.html` from every experiment folder found there; its path."""
    folders = sorted(reports.iterdir(), key=lambda d: lesson_rank(d.name))
    entries = [_entry(d) for d in folders if (d / "result.json").is_file()]
    found = [e for e in entries if e is not None]
    where = f" --state-dir {escape(str(state_dir))}" if state_dir else ""
    held = sum(1 for e in found if e["held"])
    parts = [
        "<!doctype html><html lang=en><meta charset=utf-8>",
        f"<title>chaos experiments</title><style>{_STYLE}</style>",
        f"<h1>Chaos experiments</h1><p>{held} of {len(found)} hypotheses held, in the order "
        f"the lessons build. A trace id opens as a waterfall with "
        f"<code>mesh traces TRACE_ID{where}</code>.</p>",
        summary(found),
        *(_section(e, where) for e in found),
        "</html>",
    ]
    path = reports / INDEX
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _entry(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    report = folder / "report.md"
    text = report.read_text(encoding="utf-8") if report.is_file() else ""
    return {
        "dir": folder.name,
        "title": str(data.get("title", "")),
        "hypothesis": str(data.get("hypothesis", "")),
        "held": bool(data.get("held")),
        "partial": str(data.get("partial") or ""),
        "missed": missed_of(data),
        "table": _code_block(text),
        "images": sorted(p.name for p in folder.glob("*.png")),
        "has_report": report.is_file(),
        "traces": _traces(data),
    }


def _code_block(markdown: str) -> str:
    """The first fenced block of report.md: the terminal tables and verdict lines."""
    _, sep, rest = markdown.partition("```\n")
    return rest.partition("```")[0].rstrip() if sep else ""


def _traces(data: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """(variant / phase, kind, trace ids): the slowest, degraded and failed requests."""
    found = []
    for v in data.get("variants", []):
        for phase, p in (v.get("phases") or {}).items():
            for kind, items in (p.get("traces") or {}).items():
                ids = [str(i).split(" ", 1)[0] for i in items if str(i).strip()]
                if ids:
                    found.append((f"{v.get('name')} / {phase}", kind, ids))
    return found


def _section(e: dict[str, Any], where: str) -> str:
    name = escape(e["dir"])
    verdict = verdict_mark(e, "did not hold")
    links = [f'<a href="{_href(e["dir"], "result.json")}">result.json</a>']
    if e["has_report"]:
        links.insert(0, f'<a href="{_href(e["dir"], "report.md")}">report.md</a>')
    out = [
        f'<section id="{name}"><h2>{name}: {escape(e["title"])}</h2>',
        f"<p>{verdict}. {escape(e['hypothesis'])}</p><p>{' | '.join(links)}</p>",
    ]
    if e["table"]:
        out.append(f"<pre>{escape(e['table'])}</pre>")
    out += [
        f'<a href="{_href(e["dir"], img)}"><img src="{_href(e["dir"], img)}" '
        f'alt="{escape(img)}"></a>'
        for img in e["images"]
    ]
    if e["traces"]:
        out.append("<h3>Traces worth opening</h3><ul>")
        for label, kind, ids in e["traces"]:
            codes = ", ".join(
                f'<code title="mesh traces {escape(i)}{where}">{escape(i)}</code>' for i in ids
            )
            out.append(f"<li>{escape(label)}, {escape(kind)}: {codes}</li>")
        out.append("</ul>")
    out.append("</section>")
    return "\n".join(out)
