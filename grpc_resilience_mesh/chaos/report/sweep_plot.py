"""A sweep's figure, `sweep.png`: the throughput-latency curve everyone knows.

Two panels over the offered load (x the declared capacity, log scale): the backend's goodput
(per second, the declared capacity dashed) and the accepted calls' p99 (ms), one line per
variant of the file (grpc_resilience_mesh/chaos/run/sweep_metrics.py measures the points).
"""

from __future__ import annotations

from matplotlib.figure import Figure

from grpc_resilience_mesh.chaos.report.plot_parts import legend
from grpc_resilience_mesh.chaos.results import ExperimentResult

Curve = dict[str, list[tuple[float, float, float]]]
"""line -> [(x, goodput per s, accepted p99 ms)], by x."""


def curves(result: ExperimentResult) -> Curve:
    """Each line's measured points (a point that measured nothing is left out)."""
    out: Curve = {}
    for v in result.variants:
        m = v.phases["fault"].metrics if "fault" in v.phases else {}
        x = m.get("offered_x_capacity")
        if x is None or "window_goodput_per_s" not in m:
            continue
        line = v.variant.name.removesuffix(f".{x:g}x")
        p99 = m.get("accepted_p99_ms", float("nan"))  # none accepted: a gap in the line
        out.setdefault(line, []).append((x, m["window_goodput_per_s"], p99))
    return {line: sorted(points) for line, points in out.items()}


def sweep_figure(result: ExperimentResult) -> Figure:
    sweep = result.experiment.sweep
    assert sweep is not None
    fig = Figure(figsize=(9, 6), layout="constrained")
    good_ax, p99_ax = fig.subplots(2, 1, sharex=True)
    for line, points in curves(result).items():
        xs = [p[0] for p in points]
        good_ax.plot(xs, [p[1] for p in points], marker="o", label=line, gid=f"goodput-{line}")
        p99_ax.plot(xs, [p[2] for p in points], marker="o", label=line, gid=f"p99-{line}")
    good_ax.axhline(sweep.capacity_per_s, color="grey", ls="--", lw=1, label="declared capacity")
    good_ax.set_ylabel("goodput (personalised homes/s)")
    p99_ax.set_ylabel("accepted p99 (ms)")
    p99_ax.set_xlabel("offered load (x the declared capacity)")
    p99_ax.set_xscale("log")
    for ax in (good_ax, p99_ax):
        legend(ax, outside=True)
    fig.suptitle(
        f"{result.name}: {sweep.service} {sweep.replicas} x {sweep.workers} workers x "
        f"{sweep.service_time_s * 1000:g} ms = {sweep.capacity_per_s:g} calls/s",
        fontsize=10,
    )
    return fig
