"""The terminal's view of an experiment run: its table, verdicts and one-line summaries
(report_md.py records them in report.md)."""

from __future__ import annotations

from rich.console import Console, RenderableType
from rich.markup import escape

from grpc_resilience_mesh.chaos.experiment.model import ReferenceRow
from grpc_resilience_mesh.chaos.report.missed import missed_line
from grpc_resilience_mesh.chaos.report.repeat import metric_values, spread_text, spreads
from grpc_resilience_mesh.chaos.report.seed_facts import has_a_column, seed_facts
from grpc_resilience_mesh.chaos.report.sweep_table import sweep_table
from grpc_resilience_mesh.chaos.report.table_fit import Column, FitTable
from grpc_resilience_mesh.chaos.results import ExperimentResult, VariantResult
from grpc_resilience_mesh.chaos.run.faults import describe

FATE_COLUMNS = (
    ("fate.ok", "f:ok", "fate ok: answered whole, first try"),
    ("fate.ok-after-retry", "f:re", "fate ok-after-retry: answered after retries"),
    ("fate.ok-degraded", "f:dg", "fate ok-degraded: a part answered by a fallback"),
    ("fate.failed-not-retryable", "f:nr", "fate failed-not-retryable: a code not retried"),
    ("fate.failed-deadline", "f:dl", "fate failed-deadline: the deadline ran out"),
    (
        "fate.failed-retry-skipped",
        "f:sk",
        "fate failed-retry-skipped: budget, breaker open, pushback past the deadline, attempts",
    ),
    ("fate.shed", "f:sh", "fate shed: refused by a service's limit (or our bulkhead)"),
    (
        "fate.client-throttled",
        "f:th",
        "fate client-throttled: refused by our own throttle (or the load generator's)",
    ),
)
"""The fate column set (grpc_aio_resilience's fates): one fate per request, so a row's add
up to req."""
COLUMNS = (
    ("requests", "req", "requests sent: full + degr + errors"),
    ("full", "full", "answered whole, every part by its own service (the seed's ok)"),
    ("degraded", "degr", "answered OK with a part from a fallback: not in full"),
    ("total_ms", "total ms", "wall time of the load"),
    ("p50_ms", "p50", ""),
    ("p95_ms", "p95", ""),
    ("p99_ms", "p99", ""),
    ("dependency_calls", "dep calls", "attempts that reached {dependency} (a retry counts again)"),
    ("retries", "retries", "attempts after a request's first, on every edge"),
    ("breaker_rejections", "brk rej", "attempts refused by an open breaker, every edge"),
    (
        "bulkhead_rejections",
        "bhd rej",
        "calls refused by a full bulkhead, every edge and method: a request can count twice "
        "(its {dependency} call, then its fallback's call on the same full bulkhead)",
    ),
    (
        "dependency_bulkhead_rejections",
        "dep bhd rej",
        "requests whose {dependency} call a bulkhead refused (at most one each)",
    ),
    ("fallbacks", "fallb", "fallbacks served, in requests that may still have failed"),
    ("shed", "shed", "calls a server shed, each counted at the service that shed it"),
    *FATE_COLUMNS,
    ("offered_per_s", "offered/s", "open-loop rate offered (rate_x_capacity x capacity)"),
    (
        "fault_exposure",
        "met fault",
        "calls that met the fault, from the services' counters: an app_fault's failed or held "
        "calls; a toxic's or proxy_down's attempts sent across its edge while it was on; an "
        "xds fault's attempts on its edge (each through gRPC's fault filter)",
    ),
)
"""(metric, header, meaning) of the gateway-load table, in display order."""
GENERATOR_BUDGET = 0.10
"""The load generator's CPU may be at most this share of the mesh's (issue 16)."""
OPTIONAL = ("offered_per_s", "fault_exposure")
"""Columns shown only where measured: an open-loop rate, a variant with faults."""
LEAD = ("requests", "full", "errors", "p50_ms")
"""Columns a narrow terminal keeps before even those the expectations read (their values are in
the verdict lines anyway): what happened to the requests, and the typical request's time."""
LOAD_PRIORITY = (
    "dependency_calls",
    "p99_ms",
    "retries",
    "breaker_rejections",
    "fallbacks",
    "shed",
    "bulkhead_rejections",
    "dependency_bulkhead_rejections",
    "degraded",
    "p95_ms",
    "total_ms",
)
"""Which columns stay when the terminal is narrow (after those the expectations name)."""


def _errors(metrics: dict[str, float]) -> str:
    """Non-OK status codes with their counts, one per line; codes are never shortened."""
    codes = {k[5:]: v for k, v in metrics.items() if k.startswith("code.") and k != "code.OK"}
    return "\n".join(f"{c} {v:.0f}" for c, v in sorted(codes.items())) or "-"


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.3g}"


def _seed(value: object) -> str:
    return "" if value is None else str(value)


def _priority(
    keys: list[str], exp_metrics: list[str], rest: tuple[str, ...] = (), lead: tuple[str, ...] = ()
) -> list[int]:
    """Column indexes: `lead`, the metrics the expectations read, `rest`, then the others."""
    ranked = [k for k in [*lead, *exp_metrics, *rest] if k in keys]
    return [keys.index(k) for k in dict.fromkeys(ranked)]


def _failed_variants(result: ExperimentResult) -> list[str]:
    return [
        f"{v.variant.name}: {v.skipped or v.error}" for v in result.variants if v.skipped or v.error
    ]


def scenario_table(
    result: ExperimentResult, width: int = 120, explained: set[str] | None = None
) -> RenderableType:
    """Scenario experiments: the metrics their `columns` name, a row per variant."""
    exp = result.experiment
    keys = ["variant", *exp.columns]
    table = FitTable(
        [Column("variant", justify="left", keep=True), *[Column(c) for c in exp.columns]],
        priority=_priority(keys, [e.metric for e in exp.expectations]),
        title=f"{result.name}: {exp.title}",
        caption=f"hypothesis: {exp.hypothesis}",
        notes=_failed_variants(result),
        explained=explained,
    )
    refs = {r.variant: r for r in exp.reference}
    for v in result.variants:
        phase = v.phases.get("fault")
        if phase is None:
            table.add_row(v.variant.name, *["-"] * len(exp.columns))
            continue
        table.add_row(v.variant.name, *[_cell(phase.metrics.get(c)) for c in exp.columns])
        ref = refs.get(v.variant.name)
        if ref is not None:
            table.add_row(
                "  seed", *[_seed(ref.values.get(c)) for c in exp.columns], style="dim", free=True
            )
    return table.render(width)


def _demo_load_notes(result: ExperimentResult) -> list[str]:
    """A note per variant that ran its `demo_load` (the demo's form of the file): its seed row,
    if any, was measured under the file's own load, so its times do not compare; and one per
    variant that ran its `demo_faults`, which the hypothesis, written for the file's, misstates."""
    notes = []
    for v in result.variants:
        run = f"`mesh chaos run {result.name}` runs the file's"
        if v.variant.demo_faults and v.variant.faults == v.variant.demo_faults:
            fs = [f"{describe(f)} {f.start_s:g}-{f.stop_s or 0:g} s" for f in v.variant.faults]
            notes.append(f"{v.variant.name}: the demo's faults ({'; '.join(fs)}; {run})")
        changed = v.variant.demo_load
        if changed and all(v.variant.load.get(k) == val for k, val in changed.items()):
            load = ", ".join(f"{k} {val}" for k, val in changed.items())
            notes.append(
                f"{v.variant.name}: the demo's load ({load}; {run}): its counts compare with the "
                "seed's, its times do not"
            )
    return notes


def _zero_note(headers: list[str]) -> list[str]:
    """The columns left out for being 0 in every row (a fate no request had goes unsaid)."""
    return ["0 in every row: " + ", ".join(headers)] if headers else []


Row = tuple[dict[str, str], str, bool]
"""A load-table row: its cells by metric, its style, and whether a narrow table may drop it
(the seed's rows)."""


def experiment_table(
    result: ExperimentResult, width: int = 120, explained: set[str] | None = None
) -> RenderableType:
    """The experiment's table, fitted to `width`: a row per variant and phase, the seed's
    figures beneath in dim; columns that are 0 in every row are named instead of shown;
    `explained`: the legend entries this run already printed (FitTable.explained)."""
    exp = result.experiment
    if exp.scenario is not None:
        return scenario_table(result, width, explained)
    rows = _load_rows(result, _load_keys())
    keys, zero = _shown_keys(result, _load_keys(), rows)
    headers = {k: (h, meaning.format(dependency=exp.dependency)) for k, h, meaning in COLUMNS}
    headers |= {"variant": ("variant", ""), "phase": ("phase", ""), "errors": ("errors", "")}
    table = FitTable(
        [
            Column(
                headers[k][0],
                justify="left" if k in ("variant", "phase", "errors") else "right",
                keep=k in ("variant", "phase"),
                meaning=headers[k][1],
            )
            for k in keys
        ],
        priority=_priority(keys, [e.metric for e in exp.expectations], LOAD_PRIORITY, LEAD),
        title=f"{result.name}: {exp.title}" + ("" if "phase" in keys else " (under fault)"),
        caption=f"hypothesis: {exp.hypothesis}",
        notes=[
            *_failed_variants(result),
            *_demo_load_notes(result),
            *seed_facts(exp.reference, _load_keys()),
            *_zero_note([headers[k][0] for k in zero if not k.startswith("fate.")]),
        ],
        explained=explained,
    )
    for cells, style, free in rows:
        table.add_row(*[cells.get(k, "") for k in keys], style=style, free=free)
    return table.render(width)


def _load_keys() -> list[str]:
    """Every column of the load table in display order: the errors after req, full and degr
    (the three add up to req)."""
    return [
        "variant",
        "phase",
        *(k for k, _, _ in COLUMNS[:3]),
        "errors",
        *(k for k, _, _ in COLUMNS[3:]),
    ]


def _load_rows(result: ExperimentResult, keys: list[str]) -> list[Row]:
    """A row per variant and phase (one `-` row for a variant skipped or failed), each with
    the seed's figures beneath when the experiment has a reference for it."""
    refs: dict[tuple[str, str], ReferenceRow] = {
        (r.variant, r.phase): r for r in result.experiment.reference
    }
    rows: list[Row] = []
    for v in result.variants:
        if v.skipped or v.error:
            rows.append(({"variant": v.variant.name, "phase": "-"}, "", False))
            continue
        for phase_name, phase in v.phases.items():
            m = phase.metrics
            cells = _phase_cells(result, v.variant.name, phase_name, m)
            rows.append(
                (
                    {"variant": v.variant.name, "phase": phase_name, **cells, "errors": _errors(m)},
                    "",
                    False,
                )
            )
            ref = refs.get((v.variant.name, phase_name))
            if ref is not None and has_a_column(ref, keys[2:]):
                seed = {k: _seed(ref.values.get(k)) for k in keys[2:]}
                rows.append(({**seed, "variant": "  seed", "phase": phase_name}, "dim", True))
    return rows


def _phase_cells(
    result: ExperimentResult, variant: str, phase: str, metrics: dict[str, float]
) -> dict[str, str]:
    """One phase's cells; with repeats, each the median [min-max] across the runs."""
    cells = {k: _cell(metrics.get(k, 0.0)) for k, _, _ in COLUMNS}
    if len(result.repeats) > 1:
        for k, _, _ in COLUMNS:
            found = metric_values(result.repeats, variant, phase, k)
            cells[k] = spread_text(found) if found else cells[k]
    return cells


def _shown_keys(
    result: ExperimentResult, keys: list[str], rows: list[Row]
) -> tuple[list[str], list[str]]:
    """The columns shown, and those left out for being 0 in every row. An optional column
    shows only where measured; the phase column only when a phase other than the fault's
    ran."""
    measured = {k for v in result.variants for ph in v.phases.values() for k in ph.metrics}
    keys = [k for k in keys if k not in OPTIONAL or k in measured]  # closed loop: no rate
    zero = [
        k
        for k in keys[2:]
        if k not in ("requests", "full", "errors")
        and rows
        and k not in OPTIONAL
        and all(r.get(k, "") in ("0", "", "-") for r, _, _ in rows)
    ]
    phases = {r.get("phase") for r, _, _ in rows} - {"-"}
    return [k for k in keys if k not in zero and (k != "phase" or phases != {"fault"})], zero


def showed(result: ExperimentResult) -> str:
    """What the experiment showed, in one line, from its own numbers: what missed when it did
    not hold (grpc_resilience_mesh/chaos/report/missed.py), else the first metric its
    expectations read, side by side for every variant that measured it (or one variant's
    first three), and which variants opened a breaker."""
    measured = [v for v in result.variants if v.phases]
    if not measured:
        return f"nothing measured: {result.aborted or 'every variant was skipped'}"
    if not result.held and (missed := missed_line(result)):
        return missed  # what missed, and why, first: never a metric that passed

    def value(v: VariantResult, metric: str, phase: str) -> float | None:
        ph = v.phases.get(phase)
        return None if ph is None else ph.metrics.get(metric)

    wanted = list(dict.fromkeys((e.metric, e.phase) for e in result.experiment.expectations))
    line = ""
    for metric, phase in wanted or [("dependency_calls", "fault")]:
        found = [(v, x) for v in measured if (x := value(v, metric, phase)) is not None]
        if len(found) > 1:
            line = f"{metric}: " + ", ".join(f"{v.variant.name} {_cell(x)}" for v, x in found)
            break
        if found:
            v = found[0][0]
            three = [(m, x) for m, ph in wanted if (x := value(v, m, ph)) is not None][:3]
            line = f"{v.variant.name}: " + ", ".join(f"{m} {_cell(x)}" for m, x in three)
            break
    opened = [v.variant.name for v in measured if (value(v, "breaker_opened", "fault") or 0) > 0]
    if opened:
        line += f"; breaker opened: {', '.join(opened)}"
    return line.lstrip("; ") or "no expected metric was measured"


def print_result(
    console: Console, result: ExperimentResult, explained: set[str] | None = None
) -> None:
    """The experiment's table, then its verdicts; `explained`: the legend entries this run
    already printed, so that a run of many experiments explains each header once."""
    if result.capacity or _not_probed(result):  # gateway load: capacity, generator's share
        console.print(run_line(result))  # wrapped at the width, as the tables fit it
    sweep = result.experiment.sweep is not None
    console.print((sweep_table if sweep else experiment_table)(result, console.width, explained))
    for v in result.variants:
        for phase in v.phases.values():
            for row in phase.rows:
                console.print(
                    f"  {v.variant.name}: " + ", ".join(f"{k}={val}" for k, val in row.items())
                )
    if len(result.repeats) > 1:
        for spread in spreads(result.repeats):
            colour = "green" if spread.always else "red"
            void = f", {spread.void} void" if spread.void else ""
            console.print(
                f"  [{colour}]held {spread.held}/{spread.runs}[/{colour}]{void} "
                f"{spread.variant}/{spread.phase}: {spread.metric} = {spread.shown()} "
                f"(want {spread.bound})"
                + (f"  [dim]{escape(spread.why)}[/dim]" if spread.why else "")
            )
    else:
        for verdict in result.verdicts:
            colour = {"PASS": "green", "FAIL": "red", "VOID": "yellow"}[verdict.mark]
            measured = verdict.shown
            console.print(
                f"  [{colour}]{verdict.mark}[/{colour}] {verdict.variant}/{verdict.phase}: "
                f"{verdict.metric} = {measured} (want {verdict.bound})"
                + (" [yellow]the variant met no fault[/yellow]" if verdict.void else "")
                + (f"  [dim]{escape(verdict.why)}[/dim]" if verdict.why else "")
            )
    if result.aborted:
        console.print(f"  [red]aborted[/red]: {escape(result.aborted)}")
    colour = "green" if result.held else "yellow" if result.partial else "red"
    console.print(f"  hypothesis [{colour}]{result.verdict}[/{colour}]\n")


def _not_probed(result: ExperimentResult) -> bool:
    """A gateway load's demo form that nothing read the capacity of (run/capacity_use.py)."""
    exp = result.experiment
    return not result.capacity and exp.demo_form and exp.scenario is None


def run_line(result: ExperimentResult) -> str:
    """The run's capacity for this experiment's request mix (measured once per run per mix:
    each mix has its own; right before the experiment when its load says so) and the load
    generator's CPU share."""
    cap = result.capacity
    parts = []
    if cap:
        load = result.experiment.load
        mix = "+".join(load.rpc)
        when = (
            "right before this experiment"
            if load.capacity_per_experiment
            else "once per run for that request mix"
        )
        parts.append(
            f"capacity {cap['capacity_per_s']:.0f} req/s for {mix} (measured {when}, closed "
            f"loop; p99 {cap['capacity_p99_ms']:.0f} ms)"
        )
    elif _not_probed(result):
        parts.append("capacity not probed (no bound of this form reads it)")
    share = result.generator_share
    parts.append(
        "load generator CPU: "
        + ("n/a (a mesh this process did not start)" if share is None else f"{share:.1%}")
        + " of the mesh's"
        + (
            f" (over the {GENERATOR_BUDGET:.0%} budget: the figures include its contention)"
            if share is not None and share > GENERATOR_BUDGET
            else ""
        )
    )
    return "; ".join(parts)
