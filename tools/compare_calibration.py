"""Measure `mesh chaos compare`'s false alarms and misses on real runs (issue 44's bar: at most
1 in 10 each).

    python -m tools.compare_calibration [--pairs 10] [--repeat 3] [--work DIR] [--reuse]

The experiment is provider-outage's `full` variant alone (a run of 3 repeats took 27 s at a
load average of 1, the mesh's start included; the weakened file 74 s at 3 to 8). Its weakened
twin is the same file with the gateway's breaker on Recommend switched off
(`breaker: {enabled: false}` in the variant's overrides), saved under the same name in another
folder so both results are the same experiment. Pair i:
baseline A_i; a false alarm is `compare A_i B_i` (B_i: the same file, run again) exiting 1; a miss
is `compare A_i W_i` (W_i: the weakened file) exiting 0. Each run is its own `mesh chaos run`
(its own mesh). `--reuse` keeps the result.json files already in DIR, so a rerun only compares.
"""

from __future__ import annotations

import argparse
import copy
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from grpc_resilience_mesh.chaos.experiment.model import EXPERIMENTS_DIR

EXPERIMENT = EXPERIMENTS_DIR / "provider-outage.yaml"
MESH = Path(sys.executable).parent / "mesh"


def full_only(source: dict[str, Any]) -> dict[str, Any]:
    """The experiment with its `full` variant and that variant's expectations alone."""
    doc = copy.deepcopy(source)
    doc.pop("demo_variants", None)
    doc["variants"] = [v for v in doc["variants"] if v["name"] == "full"]
    doc["expectations"] = [e for e in doc["expectations"] if e["variant"] == "full"]
    doc["reference"] = [r for r in doc.get("reference", []) if r["variant"] == "full"]
    return doc


def weakened(doc: dict[str, Any]) -> dict[str, Any]:
    """The same, the gateway's breaker on recommendation off."""
    weak = copy.deepcopy(doc)
    edge = weak["variants"][0]["overrides"]["edges"]["gateway_to_recommendation"]
    edge["breaker"] = {"enabled": False}
    return weak


def write_files(work: Path) -> tuple[Path, Path]:
    doc = full_only(yaml.safe_load(EXPERIMENT.read_text(encoding="utf-8")))
    paths = []
    for folder, body in (("baseline", doc), ("weakened", weakened(doc))):
        path = work / folder / EXPERIMENT.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


def run_once(file: Path, reports: Path, work: Path, repeat: int, reuse: bool) -> Path:
    result = reports / EXPERIMENT.stem / "result.json"
    if reuse and result.is_file():
        return result
    command = [str(MESH), "chaos", "run", str(file), "--repeat", str(repeat)]
    command += ["--reports", str(reports), "--state-dir", str(work / "state")]
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    if not result.is_file():
        raise SystemExit(f"{' '.join(command)} wrote no {result}")
    return result


def compare_exit(baseline: Path, current: Path, out: Path) -> int:
    command = [str(MESH), "chaos", "compare", str(baseline), str(current), "--json", str(out)]
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.decode()}")
    return done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("var/compare-calibration"))
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args(argv)
    started = time.monotonic()
    base_file, weak_file = write_files(args.work)
    alarms = misses = 0
    for i in range(args.pairs):
        runs = args.work / "runs"
        a = run_once(base_file, runs / f"a{i}", args.work, args.repeat, args.reuse)
        b = run_once(base_file, runs / f"b{i}", args.work, args.repeat, args.reuse)
        w = run_once(weak_file, runs / f"w{i}", args.work, args.repeat, args.reuse)
        same = compare_exit(a, b, args.work / "compare" / f"same{i}.json")
        weak = compare_exit(a, w, args.work / "compare" / f"weak{i}.json")
        alarms += same == 1
        misses += weak == 0
        print(f"pair {i + 1}: same -> exit {same}, weakened -> exit {weak}", flush=True)
    took = time.monotonic() - started
    print(
        f"false alarms {alarms} of {args.pairs}, misses {misses} of {args.pairs} "
        f"(repeat {args.repeat}; {took:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
