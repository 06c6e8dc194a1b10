"""`mesh bench mesh` in counted work: instructions per GetHome under valgrind's callgrind.

CPU seconds on a shared 2-core machine move by 0.2-0.4 of the floor from one run of one tree to the
next (docs/results/mesh-cpu.md), so they cannot tell a 3% change from noise. The instructions a
process executes for the same calls do not depend on what else the machine runs. This runs the same
benchmark (`grpc_resilience_mesh.bench.mesh.run_mesh_bench`: the floor and the mesh's variants,
interleaved) with every Python process it starts under `valgrind --tool=callgrind`, and reads each
process's instructions around a window where the benchmark reads its CPU time (`callgrind_control
--dump`, whose files count since the last dump; a process that has exited is read from the file
callgrind writes at its exit). The "CPU seconds" of the result are then billions of instructions,
and its ratios to the floor are ratios of instructions.

`python -m grpc_resilience_mesh.bench.counted [--requests N] [--concurrency C] [--rounds R]
[--variant V ...] [--json FILE] [--keep DIR]`

What it does not count the same way as the CPU bench: callgrind runs a process some 30-50x
slower, so the work a process does per second of wall time (timers: the span processor's
500 ms schedule, the connection caps' watches, health) is counted many times over per call.
Both sides of a comparison pay that alike only if they run the same timers; the floor runs
none. The instructions are the guest's (Python, grpc's C core, the libraries), not the
kernel's: the system time of the CPU bench (a TCP hop's sends and receives) is not in them.

It runs against an older tree too, where it has no copy: copy this file into that checkout
(as counted_driver.py, say) and run `python -m counted_driver --module chaos.bench.mesh` there
(before the re-zone of 61d7fe1 the benchmark was `chaos.bench.mesh`). Figures and how to read
them: docs/results/mesh-cpu.md.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

VALGRIND = (
    "valgrind",
    "--tool=callgrind",
    "--quiet",
    "--dump-line=no",
    "--compress-strings=no",
)
"""callgrind, its output kept small (no per-line costs: the totals are what is read)."""
SETTLE_S = 3.0
"""Quiet time around each window (the CPU bench's 0.7 s): under callgrind a process is slower
to export the window's spans and to go quiet after its last call."""
DUMP_TIMEOUT_S = 120.0
START_TIMEOUT_S = 600.0
GIGA = 1e9


class CountError(RuntimeError):
    """A process's instructions could not be read."""


def _total(path: Path) -> int:
    """The `totals:` (or `summary:`) line of one callgrind output file."""
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise CountError(f"{path} has no totals line (still being written?)")


def _zombie(pid: int) -> bool:
    """The process has exited (a zombie not yet waited for) or is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except FileNotFoundError:
        return True


class Counter:
    """Instructions per process, cumulative from its start, read through callgrind's dumps."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self._read: dict[Path, int] = {}

    def _files(self, pid: int) -> list[Path]:
        return sorted(self.out_dir.glob(f"cg.{pid}.*"))

    def _sum(self, pid: int, final: bool) -> int:
        paths = self._files(pid)
        if final and (self.out_dir / f"cg.{pid}").stat().st_size:
            paths.append(self.out_dir / f"cg.{pid}")
        for path in paths:
            if path not in self._read:
                self._read[path] = _total(path)
        return sum(self._read[p] for p in paths)

    def instructions(self, pid: int) -> int:
        """Dump `pid`'s counts (counting since its last dump) and return the sum of every
        dump so far; an exited process's last counts are in the file written at its exit."""
        if _zombie(pid):
            return self._sum(pid, final=True)
        before = len(self._files(pid))
        done = subprocess.run(
            ["callgrind_control", "--dump", str(pid)],
            capture_output=True,
            text=True,
            timeout=DUMP_TIMEOUT_S,
            check=False,
        )
        deadline = time.monotonic() + DUMP_TIMEOUT_S
        while len(self._files(pid)) == before:
            if _zombie(pid):
                return self._sum(pid, final=True)
            if time.monotonic() > deadline:
                raise CountError(f"no dump from pid {pid}: {done.stdout}{done.stderr}")
            time.sleep(0.05)
        return self._sum(pid, final=False)

    def giga(self, pid: int) -> float:
        return self.instructions(pid) / GIGA


def _wrap_popen(out_dir: Path) -> None:
    """Every process started with this interpreter runs under callgrind, its files in
    `out_dir` named by PID (valgrind keeps the guest's PID)."""
    original = subprocess.Popen.__init__
    python = sys.executable

    def init(self: subprocess.Popen[Any], args: Any, *a: Any, **kw: Any) -> None:
        if isinstance(args, list | tuple) and args and args[0] == python:
            args = [*VALGRIND, f"--callgrind-out-file={out_dir}/cg.%p", *args]
        original(self, args, *a, **kw)

    subprocess.Popen.__init__ = init  # type: ignore[method-assign]


SLOW = 40
"""Every time budget of the mesh's policy is SLOW times the `full` preset's under callgrind."""
SCALED = ("total_s", "attempt_s", "max_wait_s", "open_s")
LIMIT_S = 300.0
"""The policy's upper bound for a budget."""


def scaled_policy(source: Path, dest: Path) -> Path:
    """`source` (the tree's `full` preset) with every deadline, attempt timeout, bulkhead wait
    and breaker open time SLOW times longer: callgrind runs a process 30-50x slower (far more
    on a code path's first run, which it translates), and the preset's 0.1-2 s budgets would
    end calls the native mesh answers in milliseconds. The same code paths run either way."""
    import yaml

    def scale(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: min(v * SLOW, LIMIT_S)
                if k in SCALED and isinstance(v, int | float) and not isinstance(v, bool)
                else scale(v)
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [scale(v) for v in node]
        return node

    dest.write_text(yaml.safe_dump(scale(yaml.safe_load(source.read_text()))))
    return dest


def _patient(bench: Any, policy: Path) -> None:
    """Give every start-up wait of the benchmark START_TIMEOUT_S (under callgrind a service
    takes 10-20 s to import and serve, where the benchmark allows 30 s) and run the mesh on
    `policy`."""
    original = bench.wait_serving  # the OTLP sink's

    def wait(addr: str, timeout_s: float, *a: Any, **kw: Any) -> Any:
        return original(addr, max(timeout_s, START_TIMEOUT_S), *a, **kw)

    mesh_class = bench.Mesh

    def mesh(*a: Any, **kw: Any) -> Any:
        return mesh_class(*a, **{**kw, "policy": str(policy), "start_timeout_s": START_TIMEOUT_S})

    bench.wait_serving = wait
    bench.Mesh = mesh
    plain: Any = importlib.import_module(bench.__name__.rsplit(".", 1)[0] + ".plain_mesh")
    plain.PlainMesh = functools.partial(plain.PlainMesh, start_timeout_s=START_TIMEOUT_S)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m grpc_resilience_mesh.bench.counted", description=__doc__
    )
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--variant", action="append", default=None, help="repeatable")
    p.add_argument(
        "--module",
        default="grpc_resilience_mesh.bench.mesh",
        help="the tree's mesh benchmark module",
    )
    p.add_argument(
        "--policy",
        type=Path,
        default=Path("grpc_resilience_mesh/services/policies/full.yaml"),
        help="the tree's full preset, scaled by SLOW for the mesh",
    )
    p.add_argument("--json", type=Path, default=None, help="write the result here")
    p.add_argument("--keep", type=Path, default=None, help="keep callgrind's files here")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print(
            "grpc_resilience_mesh.bench.counted needs valgrind (apt install valgrind)",
            file=sys.stderr,
        )
        return 2
    if not args.policy.is_file():
        print(
            f"grpc_resilience_mesh.bench.counted: no policy at {args.policy} (run it from the "
            "tree's root, or pass --policy)",
            file=sys.stderr,
        )
        return 2
    bench: Any = importlib.import_module(args.module)
    out_dir = args.keep or Path(tempfile.mkdtemp(prefix="mesh-counted-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    counter = Counter(out_dir)
    _wrap_popen(out_dir)
    bench.cpu_seconds = counter.giga
    policy = scaled_policy(args.policy, out_dir / "full-slow.yaml")
    _patient(bench, policy)
    bench.SETTLE_S = SETTLE_S
    bench.MEASURE_TIMEOUT_S = 3600.0
    kwargs: dict[str, Any] = {
        "requests": args.requests,
        "concurrency": args.concurrency,
        "rounds": args.rounds,
        "warmup": args.warmup,
    }
    if args.variant:
        kwargs["variants"] = tuple(args.variant)
    try:
        result = bench.run_mesh_bench(**kwargs)
    finally:
        if args.keep is None:
            shutil.rmtree(out_dir, ignore_errors=True)
    result["unit"] = "giga-instructions (callgrind), not seconds"
    text = json.dumps(result, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    for name, row in result["variants"].items():
        # the bench's "ms per request" is 1000 x giga-instructions / requests: M instructions
        per = row["total_cpu_ms_per_request"]
        print(f"{name:12s} {per:8.3f} M instructions per GetHome, x floor {row['cpu_ratio']:.3f}")
        procs = row["cpu_ms_per_request"]
        print(" " * 13 + "  ".join(f"{p} {v * 1e3:.0f}k" for p, v in sorted(procs.items())))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
