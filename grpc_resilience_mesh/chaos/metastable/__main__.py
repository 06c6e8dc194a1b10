"""`python -m grpc_resilience_mesh.chaos.metastable panels|map`: the lab's model, by hand."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from grpc_resilience_mesh.chaos.metastable.compare import load_result, predict, table
from grpc_resilience_mesh.chaos.metastable.panels import four_panel, panels_of
from grpc_resilience_mesh.chaos.metastable.region_map import (
    FULL_LENGTHS_S,
    FULL_LOADS,
    QUICK_LENGTHS_S,
    QUICK_LOADS,
    maps,
    render,
    render_times,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grpc_resilience_mesh.chaos.metastable")
    sub = parser.add_subparsers(dest="command", required=True)
    panels = sub.add_parser("panels", help="the four-panel: published, predicted (, measured)")
    panels.add_argument("--seeds", type=int, default=20)
    panels.add_argument("--result", type=Path, help="`mesh chaos run ... --json` output")
    region = sub.add_parser("map", help="the vulnerability regions, retry-only and each cure")
    region.add_argument("--quick", action="store_true", help="3 loads x 3 lengths, 3 seeds")
    region.add_argument("--seeds", type=int, default=None)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    started = time.monotonic()
    panels = four_panel()
    if args.command == "panels":
        result = load_result(args.result) if args.result else None
        if result is not None:
            panels = panels_of(result["file"])
        print(table([predict(p, args.seeds) for p in panels], result))
    else:
        tipping = next(p.system for p in panels if p.name == "tipping")
        loads, lengths = (
            (QUICK_LOADS, QUICK_LENGTHS_S)
            if args.quick
            else (
                FULL_LOADS,
                FULL_LENGTHS_S,
            )
        )
        seeds = args.seeds or (3 if args.quick else 10)
        print(
            f"x{tipping.trigger.factor:g} slowdown from {tipping.trigger.start_s:g} s, "
            f"{seeds} seeds a cell, load as a fraction of {tipping.capacity_per_s:g} calls/s"
        )
        named = maps(tipping, loads, lengths, seeds)
        print(render(named))
        for name, rows in named.items():
            print(render_times(name, rows))
    print(f"({time.monotonic() - started:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
