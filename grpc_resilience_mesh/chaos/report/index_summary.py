"""The top of `reports/index.html`: one row per experiment (held or missed), and for a miss
what it missed, read from its result.json, so the misses are found without scrolling."""

from __future__ import annotations

from html import escape
from typing import Any


def missed_of(data: dict[str, Any]) -> list[str]:
    """What a result.json's run missed: its abort, variants' errors, failed expectations."""
    found = [f"aborted: {data['aborted']}"] if data.get("aborted") else []
    found += [
        f"{v.get('name')} failed: {v['error']}" for v in data.get("variants", []) if v.get("error")
    ]
    found += [
        f"{v.get('name')} skipped: {v['skipped']}"
        for v in data.get("variants", [])
        if v.get("skipped")
    ]
    repeat = data.get("repeat") or []
    if any(s.get("runs", 0) > 1 for s in repeat):
        found += [
            f"{s['variant']} {s['metric']} held {s['held']}/{s['runs']} (want {s['bound']})"
            for s in repeat
            if s.get("held") != s.get("runs")
        ]
    else:
        found += [
            f"{v['variant']} {v['metric']} "
            + ("n/a" if v.get("measured") is None else f"{v['measured']:.4g}")
            + (f": {v['note']}" if v.get("note") else "")
            + f" (want {v['bound']})"
            + (
                ": the variant met no fault"
                if v.get("void")
                else f": {v['why']}"
                if v.get("why")
                else ""
            )
            for v in data.get("verdicts", [])
            if not v.get("passed")
        ]
    return found


def verdict_mark(entry: dict[str, Any], miss: str) -> str:
    """held, partial (N of M variants ran), or `miss`, marked up."""
    if entry["held"]:
        return '<b class="held">held</b>'
    if entry.get("partial"):
        return f'<b class="partial">partial ({escape(entry["partial"])})</b>'
    return f'<b class="failed">{miss}</b>'


def summary(entries: list[dict[str, Any]]) -> str:
    """The summary table: each experiment, linked to its section, held or missed and why."""
    rows = []
    for e in entries:
        name = escape(e["dir"])
        verdict = verdict_mark(e, "missed")
        why = "<br>".join(escape(m) for m in e["missed"]) if not e["held"] else ""
        rows.append(
            f'<tr><td><a href="#{name}">{name}</a></td><td>{verdict}</td><td>{why}</td></tr>'
        )
    return (
        '<table class="summary"><tr><th>experiment</th><th>verdict</th><th>what missed</th></tr>'
        + "".join(rows)
        + "</table>"
    )
