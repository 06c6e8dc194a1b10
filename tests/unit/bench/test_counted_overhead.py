"""grpc_resilience_mesh.bench.counted_overhead: instructions per call are a K-call run's total
minus a K/2-call run's, over the calls between them; every stack's child runs under callgrind;
a failed call fails the run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.bench import counted_overhead as co

START_UP = 5_000_000
"""A made-up start-up cost: the same in both runs, so it must cancel."""
PER_CALL = 700_000


def test_start_up_cancels_and_the_odd_call_is_counted() -> None:
    assert co.per_call(START_UP + 400 * PER_CALL, START_UP + 200 * PER_CALL, 400) == PER_CALL
    assert co.per_call(START_UP + 5 * PER_CALL, START_UP + 2 * PER_CALL, 5) == PER_CALL
    with pytest.raises(ValueError):
        co.per_call(1, 1, 1)


def test_ours_is_full_minus_floor_over_raw() -> None:
    figures = co.ratios({"raw": 600.0, "floor": 630.0, "client": 700.0, "full": 810.0})
    assert figures["ours"] == 180.0
    assert figures["ours_ratio"] == pytest.approx(0.3)
    assert figures["full_minus_raw"] == 210.0
    assert figures["client_minus_raw"] == 100.0
    assert "server_minus_raw" not in figures
    assert "client_minus_hand" not in figures  # no hand-composed stack counted


def test_the_client_job_is_set_against_the_same_job_by_hand() -> None:
    figures = co.ratios({"raw": 600.0, "hand": 760.0, "client": 700.0})
    assert figures["hand_minus_raw"] == 160.0
    assert figures["client_minus_hand"] == -60.0


def test_each_stack_runs_twice_under_callgrind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands: list[list[str]] = []

    def fake_run(command: list[str], check: bool, env: dict[str, str]) -> Any:
        assert env["PYTHONHASHSEED"] == "0"
        commands.append(command)
        out = Path(next(a for a in command if a.startswith("--callgrind-out-file=")).split("=")[1])
        calls = int(command[command.index("--calls") + 1])
        extra = 100_000 if command[command.index("--child") + 1] == "full" else 0
        out.write_text(f"events: Ir\nsummary: {START_UP + calls * (PER_CALL + extra)}\n")
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    result = co.run_counted(("raw", "full"), calls=40, concurrency=4)
    assert result["instructions_per_call"] == {"raw": PER_CALL, "full": PER_CALL + 100_000}
    assert result["differences"]["full_minus_raw"] == 100_000
    assert [c[c.index("--calls") + 1] for c in commands] == ["40", "20", "40", "20"]
    for command in commands:
        assert command[:2] == ["valgrind", "--tool=callgrind"]
        python = command.index(sys.executable)
        assert command[python + 1 : python + 3] == [
            "-m",
            "grpc_resilience_mesh.bench.counted_overhead",
        ]


def test_repeats_pair_runs_by_hash_seed_and_take_the_median(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A K run and its K/2 run share a hash seed (the seed moves the calls' own paths); the
    stack's figure is the median of the seeds' figures, so one odd seed does not move it."""
    extra_by_seed = {"0": 0, "1": 50_000, "2": 10_000}
    seeds: list[tuple[str, str]] = []

    def fake_run(command: list[str], check: bool, env: dict[str, str]) -> Any:
        out = Path(next(a for a in command if a.startswith("--callgrind-out-file=")).split("=")[1])
        calls = int(command[command.index("--calls") + 1])
        seed = env["PYTHONHASHSEED"]
        seeds.append((seed, str(calls)))
        out.write_text(f"summary: {START_UP + calls * (PER_CALL + extra_by_seed[seed])}\n")
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    result = co.run_counted(("raw",), calls=40, concurrency=4, repeat=3)
    assert seeds == [("0", "40"), ("0", "20"), ("1", "40"), ("1", "20"), ("2", "40"), ("2", "20")]
    assert result["by_seed"]["raw"] == [PER_CALL, PER_CALL + 50_000, PER_CALL + 10_000]
    assert result["instructions_per_call"] == {"raw": PER_CALL + 10_000}


async def test_a_failed_call_fails_the_run() -> None:
    class Refusing:
        async def GetProfile(self, request: Any, **kwargs: Any) -> Any:
            raise RuntimeError("refused")

    with pytest.raises(co.CountedCallFailed, match="refused"):
        await co._calls(Refusing(), 3, 2)
