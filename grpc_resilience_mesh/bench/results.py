"""A benchmark's results page (docs/results/*.md), rewritten in place by the command that measures
it (`--results PATH` of `mesh bench mesh|overhead|proxy|startup`, `mesh soak`, `mesh demo`, `mesh
chaos run`, `python -m grpc_resilience_mesh.bench.loadgen_bench`, `python -m
grpc_resilience_mesh.bench.console_cpu`).

The page's prose stays as written; only the block between `BEGIN` and `END` is replaced: the
latest figures, as ratios, with the machine, the date and the command that measured them.
History is git's. A page without the markers is written whole.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BEGIN = "<!-- measured: begin (rewritten by the command below; edit outside these marks) -->"
END = "<!-- measured: end -->"
MESH_PROCESSES = ("gateway", "recommendation", "profile", "proxy", "client")


@dataclass(frozen=True)
class Machine:
    """Where and when a figure was measured."""

    cpus: int
    loadavg_1m: float
    python: str
    when: datetime

    @classmethod
    def now(cls) -> Machine:
        return cls(
            cpus=os.cpu_count() or 1,
            loadavg_1m=os.getloadavg()[0],
            python=platform.python_version(),
            when=datetime.now(UTC),
        )

    def line(self) -> str:
        return (
            f"Measured {self.when:%Y-%m-%d %H:%M} UTC on {self.cpus} CPUs, Python {self.python}, "
            f"load average {self.loadavg_1m:.2f} at the end"
        )


def markdown_table(heads: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table: the heads, then one line per row."""
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    return "\n".join([*lines, *("| " + " | ".join(row) + " |" for row in rows)]) + "\n"


def mesh_block(result: dict[str, Any], machine: Machine, command: str) -> str:
    """`mesh bench mesh`'s figures: CPU ms per GetHome per process, ratios to the floor."""
    heads = ("setup", "total", "gw", "rec", "prof", "proxy", "client", "req/s", "p50 ms")
    rows = []
    for name, row in result["variants"].items():
        cpu = row["cpu_ms_per_request"]
        rows.append(
            (
                name,
                f"{row['total_cpu_ms_per_request']:.2f}",
                *(f"{cpu[p]:.2f}" if p in cpu else "-" for p in MESH_PROCESSES),
                f"{row['throughput_rps']:.0f}",
                f"{row['p50_ms']:.1f}",
                f"{row['p99_ms']:.1f}",
                f"**{row['cpu_ratio']:.2f}**",
                f"**{row['throughput_ratio']:.2f}**",
            )
        )
    degraded = [
        f"- {name}: {row['degraded']} of {row['requests']} answers degraded: its CPU is understated"
        for name, row in result["variants"].items()
        if row.get("degraded")
    ]
    return (
        f"{machine.line()}; {result['requests']} requests x {result['rounds']} interleaved "
        f"rounds, {result['concurrency']} in flight. CPU in ms per GetHome per process; "
        "x: ratio to the floor.\n\n"
        + markdown_table((*heads, "p99 ms", "CPU x floor", "req/s x floor"), rows)
        + ("\n" + "\n".join(degraded) + "\n" if degraded else "")
        + f"\nReproduce: `{command}`\n"
    )


def overhead_block(result: dict[str, Any], machine: Machine, command: str) -> str:
    """`mesh bench overhead`'s figures: one process, loop and process CPU per call, ratios to
    raw grpc.aio, our own share and the hand-composed comparison where measured."""
    heads = ("variant", "p50 ms", "p99 ms", "calls/s", "p50 x raw", "calls/s x raw")
    has_process = all("process_cpu_us_per_call" in r for r in result["variants"].values())
    rows = [
        (
            name,
            f"{row['p50_ms']:.2f}",
            f"{row['p99_ms']:.2f}",
            f"{row['throughput']:.0f}",
            f"{row['p50_ratio']:.2f}",
            f"{row['throughput_ratio']:.2f}",
            f"{row['loop_cpu_us_per_call']:.0f}",
            f"**{row['cpu_ratio']:.2f}**",
            *(
                (f"{row['process_cpu_us_per_call']:.0f}", f"{row['process_cpu_ratio']:.2f}")
                if has_process
                else ()
            ),
        )
        for name, row in result["variants"].items()
    ]
    cpu_heads: tuple[str, ...] = ("loop CPU us/call", "CPU x raw")
    if has_process:
        cpu_heads += ("process CPU us/call", "process CPU x raw")
    return (
        f"{machine.line()}; {result['calls']} calls x {result['rounds']} interleaved rounds, "
        f"{result['concurrency']} in flight.\n\n"
        + markdown_table((*heads, *cpu_heads), rows)
        + _overhead_summary(result)
        + f"\nReproduce: `{command}`\n"
    )


def _overhead_summary(result: dict[str, Any]) -> str:
    ours = result.get("ours_us_per_call")
    if ours is None:
        return ""
    text = f"\nOurs beyond the interceptor API (full - floor): {ours:.0f} us of loop CPU per call"
    if "ours_ratio" in result:
        text += f", {result['ours_ratio']:.2f} of a raw call's (target: at most 0.15)"
    text += ".\n"
    over_raw = result.get("full_minus_raw_us_per_call")
    if over_raw is not None:
        text += (
            f"Everything ours, the interceptor API's share included (full - raw): {over_raw:.0f} "
            f"us of loop CPU per call, {result['full_minus_raw_ratio']:.2f} of a raw call's.\n"
        )
    versus_hand = result.get("client_minus_hand_us_per_call")
    if versus_hand is not None:
        cheaper = "cheaper" if versus_hand < 0 else "dearer"
        text += (
            f"Our client pipeline against tenacity + aiobreaker + asyncio.Semaphore doing the "
            f"same job (client - hand): {versus_hand:+.0f} us of loop CPU per call ({cheaper}).\n"
        )
    fused = result.get("fused_saves_us_per_call")
    if fused is not None:
        text += (
            f"The same client pipeline through its layers against it fused "
            f"(client-layered - client): {fused:+.0f} us of loop CPU per call.\n"
        )
    direct = result.get("direct_saves_us_per_call")
    if direct is not None:
        text += (
            f"The same client pipeline through grpc.aio's interceptor API against the channel "
            f"that runs it in the caller's task (client-intercepted - client): {direct:+.0f} us "
            f"of loop CPU per call.\n"
        )
    mount = result.get("mount_saves_us_per_call")
    if mount is not None:
        text += (
            f"The same server chain as one grpc.aio interceptor against it mounted past the "
            f"interceptor API (server-intercepted - server): {mount:+.0f} us of loop CPU per "
            f"call.\n"
        )
    return text


def proxy_block(result: dict[str, Any], machine: Machine, command: str) -> str:
    """`mesh bench proxy`'s figures: direct, the embedded proxy, real Toxiproxy; x: to direct."""
    direct = result["variants"]["direct"]
    heads = ("variant", "p50 ms", "p99 ms", "calls/s", "p50 x direct", "p99 x direct")
    rows = [
        (
            name,
            f"{row['p50_ms']:.2f}",
            f"{row['p99_ms']:.2f}",
            f"{row['throughput']:.0f}",
            f"**{row.get('p50_ratio', 1.0):.2f}**",
            f"{row['p99_ms'] / direct['p99_ms']:.2f}",
            f"**{row.get('throughput_ratio', 1.0):.2f}**",
        )
        for name, row in result["variants"].items()
    ]
    return (
        f"{machine.line()}; a unary health Check, {result['calls']} calls x {result['rounds']} "
        f"interleaved rounds, {result['concurrency']} in flight, no toxics"
        + ("" if "real" in result["variants"] else " (no real Toxiproxy built: no `real` row)")
        + ".\n\n"
        + markdown_table((*heads, "calls/s x direct"), rows)
        + f"\nReproduce: `{command}`\n"
    )


def rewrite(path: Path, title: str, block: str) -> None:
    """Put `block` between the page's markers, keeping everything else; a new page gets a title."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    head, begin, rest = text.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not (begin and end):
        head, tail = f"# {title}\n\n", "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{head}{BEGIN}\n{block}{END}{tail}", encoding="utf-8")


def ghz_block(result: dict[str, Any], machine: Machine, command: str) -> str:
    """`mesh bench mesh --client ghz`'s figures: both clients on each setup, and their ratios."""
    heads: tuple[str, ...] = ("setup", "client", "req/s", "p50 ms", "p99 ms")
    heads += ("client CPU ms/call", "client busy", "req/s x floor")
    rows = []
    for name, row in result["ghz"].items():
        for client in ("ours", "ghz"):
            rows.append(
                (
                    name,
                    client,
                    f"{row[f'{client}_rps']:.0f}",
                    f"{row[f'{client}_p50_ms']:.1f}",
                    f"{row[f'{client}_p99_ms']:.1f}",
                    f"{row[f'{client}_client_cpu_ms']:.2f}",
                    f"{row[f'{client}_client_busy']:.2f}",
                    f"{row.get(f'{client}_rps_x_floor', 1.0):.2f}",
                )
            )
        rows.append(
            (
                name,
                "**ghz / ours**",
                *(f"**{row[f'{f}_ghz_over_ours']:.2f}**" for f in ("rps", "p50_ms", "p99_ms")),
                "",
                "",
                "",
            )
        )
    apart = [
        f"- {name}: {', '.join(row['disagree'])} more than 10% apart; "
        f"within the rounds' own spread (ours {row['ours_rps_spread']:.0%}, ghz "
        f"{row['ghz_rps_spread']:.0%} of req/s): {', '.join(row['within_spread']) or 'none'}"
        for name, row in result["ghz"].items()
        if row["disagree"]
    ]
    return (
        f"{machine.line()}; {result['requests']} GetHome calls x {result['rounds']} interleaved "
        f"rounds, {result['concurrency']} in flight on one connection, each client after its "
        "own warm-up. Client busy: its CPU seconds per second of the window (1.00: a core "
        "saturated).\n\n"
        + markdown_table(heads, rows)
        + ("\n" + "\n".join(apart) + "\n" if apart else "\nghz and ours agree within 10%.\n")
        + f"\nReproduce: `{command}`\n"
    )
