"""`mesh bench overhead` in counted work: instructions per call under valgrind's callgrind.

The loop CPU of `mesh bench overhead` moves by tens of us per call between runs on a shared
machine, more than the changes it is asked to judge. The instructions a process executes for the
same calls do not depend on what else the machine runs. This starts one process per stack (raw,
floor, hand, client, server, full: the overhead bench's variants of those names, built by
`grpc_resilience_mesh.bench.overhead`) under `valgrind --tool=callgrind`, once with K calls and
once with K/2, and reads the totals callgrind writes when each exits. Imports, set-up, warm-up
and shut-down are the same in both runs, so the difference is K/2 calls' instructions alone.

`python -m grpc_resilience_mesh.bench.counted_overhead [--calls K] [--concurrency C]
[--stack S ...] [--json FILE]`

What it counts: every thread of the process (grpc's C core, Python, the libraries), the
guest's instructions, not the kernel's (a TCP hop's system time is not in them). Callgrind
runs a process some 30-50x slower; the calls get a 120 s deadline and the edge's budgets are
as long, so no call fails for it (a failed call fails the run: a refusal is a different path).
Timers that fire per second of wall time are counted per call more often than natively, and
more in a run that a busy machine slows. And the hash seed moves dict and set orders, and with
them the paths of the same calls: one stack measured 735 k and 830 k instructions per call
under two random seeds. So each pair of runs (K and K/2) shares a hash seed (`PYTHONHASHSEED`),
and `--repeat N` counts N pairs under the seeds 0 to N-1; a stack's figure is the median of its
pairs' (each pair's own figure is in the JSON).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

STACKS = ("raw", "floor", "hand", "client", "server", "full")
"""The overhead bench's stacks counted here, in its names."""
WARMUP_CALLS = 50
"""Calls before the counted ones, the same in both runs: connections, caches, first paths."""
CALL_TIMEOUT_S = 120.0
"""Each call's deadline and the edge's budgets: callgrind's slowness must not end a call."""
VALGRIND = ("valgrind", "--tool=callgrind", "--quiet", "--dump-line=no")


class CountedCallFailed(RuntimeError):
    """A call of a counted run failed: its instructions are not a successful call's."""


def per_call(full_run: int, half_run: int, calls: int) -> float:
    """Instructions per call from a run of `calls` calls and one of `calls // 2`: set-up,
    warm-up and shut-down are in both and cancel."""
    if calls < 2:
        raise ValueError("calls must be at least 2: the half run needs one")
    return (full_run - half_run) / (calls - calls // 2)


def ratios(per_stack: dict[str, float]) -> dict[str, float]:
    """The figures the issue asks for, in instructions: each side's and ours over raw."""
    raw = per_stack["raw"]
    out: dict[str, float] = {}
    for name in ("floor", "hand", "client", "server", "full"):
        if name in per_stack:
            out[f"{name}_minus_raw"] = per_stack[name] - raw
    if "client" in per_stack and "hand" in per_stack:
        # Both client jobs over the same plain server: below 0 ours costs less.
        out["client_minus_hand"] = per_stack["client"] - per_stack["hand"]
    if "full" in per_stack and "floor" in per_stack:
        out["ours"] = per_stack["full"] - per_stack["floor"]
        out["ours_ratio"] = out["ours"] / raw
    if "full" in per_stack:
        out["full_minus_raw_ratio"] = out["full_minus_raw"] / raw
    return out


async def _build(stack: str, concurrency: int) -> tuple[Any, Any]:
    """The overhead bench's `stack`, alone in this process: (its variants, a stub)."""
    from grpc_resilience_mesh.bench import overhead
    from grpc_resilience_mesh.bench.floor import NoopClientInterceptor, NoopServerInterceptor
    from grpc_resilience_mesh.services.v1 import profile_pb2_grpc

    variants = overhead._Variants(concurrency)
    edge = variants.edge
    variants.edge = replace(
        edge, deadline=replace(edge.deadline, total_s=CALL_TIMEOUT_S, attempt_s=CALL_TIMEOUT_S / 4)
    )
    builders: dict[str, Callable[[], Awaitable[None]]] = {
        "raw": lambda: variants.plain("raw", []),
        "floor": lambda: variants.plain(
            "floor", [NoopServerInterceptor()], [NoopClientInterceptor()]
        ),
        "hand": lambda: variants.hand_composed("hand"),
        "client": lambda: variants.full_stack("client", None, server=False),
        "server": lambda: variants.full_stack("server", None, client=False),
        "full": lambda: variants.full_stack("full", None),
    }
    await builders[stack]()
    if stack in variants.stubs:  # hand: the hand-composed caller around a plain stub
        return variants, variants.stubs[stack]
    return variants, profile_pb2_grpc.ProfileServiceStub(variants.channels[stack])


async def _calls(stub: Any, calls: int, concurrency: int) -> None:
    from grpc_resilience_mesh.bench.overhead import _REQUEST

    remaining = calls

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            try:
                await stub.GetProfile(_REQUEST, timeout=CALL_TIMEOUT_S)
            except Exception as exc:
                raise CountedCallFailed(repr(exc)) from exc

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def run_child(stack: str, calls: int, concurrency: int) -> None:
    """One counted run: the stack, its warm-up, `calls` calls, shut-down."""
    from grpc_resilience_mesh.services.runtime.collector import freeze_startup_objects

    variants, stub = await _build(stack, concurrency)
    freeze_startup_objects()
    try:
        await _calls(stub, WARMUP_CALLS, concurrency)
        await _calls(stub, calls, concurrency)
    finally:
        await variants.close()


def _count(stack: str, calls: int, concurrency: int, out_dir: Path, seed: int = 0) -> int:
    """Instructions of one whole child process under callgrind, its hash seed `seed`."""
    out = out_dir / f"cg.{stack}.{calls}.{seed}"
    command = [
        *VALGRIND,
        f"--callgrind-out-file={out}",
        sys.executable,
        "-m",
        __name__ if __name__ != "__main__" else "grpc_resilience_mesh.bench.counted_overhead",
        "--child",
        stack,
        "--calls",
        str(calls),
        "--concurrency",
        str(concurrency),
    ]
    subprocess.run(command, check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)})
    for line in out.read_text(errors="replace").splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise RuntimeError(f"{out} has no totals line")


def run_counted(
    stacks: tuple[str, ...], calls: int, concurrency: int, repeat: int = 1
) -> dict[str, Any]:
    """Instructions per call of each stack (the median over `repeat` hash seeds of a K run
    minus a K/2 run under the same seed), and the ratios to raw."""
    out_dir = Path(tempfile.mkdtemp(prefix="mesh-counted-overhead-"))
    runs: dict[str, list[tuple[int, int]]] = {}
    try:
        for s in stacks:  # each stack's figure as it comes: a later failure keeps it
            runs[s] = [
                (
                    _count(s, calls, concurrency, out_dir, seed),
                    _count(s, calls // 2, concurrency, out_dir, seed),
                )
                for seed in range(repeat)
            ]
            each = [per_call(full, half, calls) / 1e3 for full, half in runs[s]]
            shown = ", ".join(f"{k:.1f}" for k in each)
            print(f"{s}: k instructions per call by hash seed: {shown}", file=sys.stderr)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    by_seed = {
        s: [per_call(full, half, calls) for full, half in pairs] for s, pairs in runs.items()
    }
    per_stack = {s: statistics.median(figures) for s, figures in by_seed.items()}
    result: dict[str, Any] = {
        "calls": calls,
        "concurrency": concurrency,
        "repeat": repeat,
        "unit": "instructions per call (callgrind), K calls minus K/2 under one hash seed, "
        "the median over seeds 0..repeat-1",
        "instructions_per_call": per_stack,
        "by_seed": by_seed,
        "runs": {s: [{"full": f, "half": h} for f, h in pairs] for s, pairs in runs.items()},
    }
    if "raw" in per_stack:
        result["differences"] = ratios(per_stack)
    return result


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m grpc_resilience_mesh.bench.counted_overhead", description=__doc__
    )
    p.add_argument("--calls", type=int, default=600, help="K: the long run's calls")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--stack", action="append", choices=STACKS, default=None, help="repeatable")
    p.add_argument(
        "--repeat", type=int, default=1, help="N pairs of runs under hash seeds 0..N-1; the median"
    )
    p.add_argument("--json", type=Path, default=None, help="write the result here")
    p.add_argument("--child", choices=STACKS, default=None, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.child:
        asyncio.run(run_child(args.child, args.calls, args.concurrency))
        return 0
    if shutil.which("valgrind") is None:
        print("counted_overhead needs valgrind (apt install valgrind)", file=sys.stderr)
        return 2
    stacks = tuple(args.stack) if args.stack else STACKS
    if args.repeat < 1:
        print("--repeat must be at least 1", file=sys.stderr)
        return 2
    result = run_counted(stacks, args.calls, args.concurrency, args.repeat)
    text = json.dumps(result, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    for name, per in result["instructions_per_call"].items():
        print(f"{name:8s} {per / 1e3:9.1f} k instructions per call")
    for name, value in result.get("differences", {}).items():
        shown = f"{value:.3f}" if name.endswith("ratio") else f"{value / 1e3:.1f} k"
        print(f"{name:22s} {shown}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
