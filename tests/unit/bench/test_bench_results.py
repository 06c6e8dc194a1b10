"""A bench command rewrites its results page in place: figures as ratios, the machine, the
date and the command, and the page's own prose kept (no benchmark runs here: fed results)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.bench.results import (
    BEGIN,
    END,
    Machine,
    mesh_block,
    overhead_block,
    rewrite,
)
from grpc_resilience_mesh.cli.app import app

MACHINE = Machine(
    cpus=2, loadavg_1m=1.5, python="3.11.7", when=datetime(2026, 12, 1, 6, 20, tzinfo=UTC)
)


def _mesh_row(total: float, cpu_ratio: float, rps: float, degraded: int = 0) -> dict[str, Any]:
    procs = {"gateway": 0.6, "recommendation": 0.5, "profile": 0.5, "client": 0.2}
    return {
        "total_cpu_ms_per_request": total,
        "cpu_ms_per_request": procs,
        "throughput_rps": rps,
        "p50_ms": 15.6,
        "p99_ms": 32.9,
        "cpu_ratio": cpu_ratio,
        "throughput_ratio": rps / 1020,
        "degraded": degraded,
        "requests": 1500,
    }


MESH_RESULT: dict[str, Any] = {
    "requests": 1500,
    "rounds": 3,
    "concurrency": 16,
    "cpus": 2,
    "loadavg_1m": 1.5,
    "variants": {
        "floor": _mesh_row(1.83, 1.0, 1020),
        "traced": _mesh_row(2.31, 1.29, 821, degraded=4),
    },
}
OVERHEAD_RESULT: dict[str, Any] = {
    "calls": 3000,
    "rounds": 3,
    "concurrency": 64,
    "ours_us_per_call": 117.0,
    "variants": {
        name: {
            "p50_ms": p50,
            "p99_ms": 50.0,
            "throughput": tput,
            "p50_ratio": p50 / 31.19,
            "throughput_ratio": tput / 1976,
            "loop_cpu_us_per_call": cpu,
            "cpu_ratio": cpu / 505,
        }
        for name, p50, tput, cpu in (("raw", 31.19, 1976, 505), ("full", 43.53, 1454, 681))
    },
}


def test_mesh_block_states_ratios_machine_date_and_command() -> None:
    block = mesh_block(MESH_RESULT, MACHINE, "mesh bench mesh --requests 1500")
    assert "Measured 2026-12-01 06:20 UTC on 2 CPUs, Python 3.11.7, load average 1.50" in block
    assert (
        "| traced | 2.31 | 0.60 | 0.50 | 0.50 | - | 0.20 | 821 | 15.6 | 32.9 "
        "| **1.29** | **0.80** |" in block
    )
    assert "traced: 4 of 1500 answers degraded" in block
    assert block.endswith("Reproduce: `mesh bench mesh --requests 1500`\n")


def test_overhead_block_states_ratios_to_raw() -> None:
    block = overhead_block(OVERHEAD_RESULT, MACHINE, "mesh bench overhead")
    assert "| full | 43.53 | 50.00 | 1454 | 1.40 | 0.74 | 681 | **1.35** |" in block
    assert "(full - floor): 117 us" in block


def test_overhead_block_adds_process_cpu_our_share_and_the_hand_made_comparison() -> None:
    rows = {
        name: {**row, "process_cpu_us_per_call": cpu, "process_cpu_ratio": cpu / 400}
        for (name, row), cpu in zip(OVERHEAD_RESULT["variants"].items(), (400, 560), strict=True)
    }
    result = {
        **OVERHEAD_RESULT,
        "variants": rows,
        "ours_ratio": 117 / 505,
        "client_minus_hand_us_per_call": -12.4,
    }
    block = overhead_block(result, MACHINE, "mesh bench overhead")
    assert "| loop CPU us/call | CPU x raw | process CPU us/call | process CPU x raw |" in block
    assert "| full | 43.53 | 50.00 | 1454 | 1.40 | 0.74 | 681 | **1.35** | 560 | 1.40 |" in block
    assert "117 us of loop CPU per call, 0.23 of a raw call's (target: at most 0.15)" in block
    assert "(client - hand): -12 us of loop CPU per call (cheaper)" in block


def test_rewrite_replaces_only_the_measured_block(tmp_path: Path) -> None:
    page = tmp_path / "mesh-cpu.md"
    page.write_text(f"# CPU\n\nwhat it measures\n\n{BEGIN}\nold figures\n{END}\n\nnotes\n")
    rewrite(page, "ignored title", "new figures\n")
    assert (
        page.read_text() == f"# CPU\n\nwhat it measures\n\n{BEGIN}\nnew figures\n{END}\n\nnotes\n"
    )


def test_rewrite_writes_a_new_page_whole(tmp_path: Path) -> None:
    page = tmp_path / "results" / "new.md"
    rewrite(page, "New bench", "figures\n")
    assert page.read_text() == f"# New bench\n\n{BEGIN}\nfigures\n{END}\n"


def test_mesh_bench_results_option_rewrites_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("grpc_resilience_mesh.bench.mesh.run_mesh_bench", lambda **_: MESH_RESULT)
    page = tmp_path / "mesh-cpu.md"
    page.write_text(f"# CPU\n\n{BEGIN}\nold\n{END}\n")
    args = ["bench", "mesh", "--requests", "1500", "--rounds", "3", "--results", str(page)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert "old" not in text and "**1.29**" in text
    assert "Reproduce: `mesh bench mesh --requests 1500 --concurrency 16 --rounds 3`" in text


def test_overhead_bench_results_option_rewrites_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def fake(**_: object) -> dict[str, Any]:
        return OVERHEAD_RESULT

    monkeypatch.setattr("grpc_resilience_mesh.bench.overhead.run_overhead_bench", fake)
    page = tmp_path / "overhead.md"
    args = ["bench", "overhead", "--tracing", "--results", str(page)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert text.startswith("# Resilience pipeline overhead\n")
    assert "mesh bench overhead --calls 3000 --concurrency 64 --rounds 3 --tracing" in text


PROXY_RESULT: dict[str, Any] = {
    "calls": 3000,
    "rounds": 3,
    "concurrency": 64,
    "variants": {
        "direct": {"p50_ms": 17.70, "p99_ms": 240.0, "throughput": 1889},
        "proxied": {
            "p50_ms": 19.95,
            "p99_ms": 54.6,
            "throughput": 3072,
            "p50_ratio": 19.95 / 17.70,
            "throughput_ratio": 3072 / 1889,
        },
    },
}


def _page(path: Path) -> None:
    path.write_text(f"# Page\n\nwhat it measures\n\n{BEGIN}\nold figures\n{END}\n\nwhat it means\n")


def _kept_around(path: Path) -> str:
    """The page's text between the marks; the prose on either side must be as written."""
    text = path.read_text()
    assert text.startswith(f"# Page\n\nwhat it measures\n\n{BEGIN}\n"), text
    assert text.endswith(f"{END}\n\nwhat it means\n"), text
    assert "old figures" not in text
    return text


def test_proxy_bench_results_option_rewrites_the_block_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def fake(**_: object) -> dict[str, Any]:
        return PROXY_RESULT

    monkeypatch.setattr("grpc_resilience_mesh.bench.proxy.run_proxy_bench", fake)
    page = tmp_path / "proxy.md"
    _page(page)
    args = ["bench", "proxy", "--results", str(page)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = _kept_around(page)
    assert "| proxied | 19.95 | 54.60 | 3072 | **1.13** | 0.23 | **1.63** |" in text
    assert "(no real Toxiproxy built: no `real` row)" in text
    assert "Reproduce: `mesh bench proxy --calls 3000 --concurrency 64 --rounds 3`" in text


def test_loadgen_bench_results_rewrites_the_block_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grpc_resilience_mesh.bench import loadgen_bench
    from grpc_resilience_mesh.bench.loadgen_bench import Measured

    async def fake(rates: list[float], calls: int, rounds: int) -> list[Measured]:
        us = {"python": (238.0, 158.0), "go": (109.0, 87.0)}
        return [
            Measured(rate, r + 1, kind, us[kind][r] / (rate / 600), calls)
            for rate in rates
            for r in range(rounds)
            for kind in ("python", "go")
        ]

    monkeypatch.setattr(loadgen_bench, "bench", fake)
    page = tmp_path / "loadgen.md"
    _page(page)
    assert loadgen_bench.main(["--rate", "600", "--rounds", "2", "--results", str(page)]) == 0
    text = _kept_around(page)
    assert "Measured 20" in text and "6,000 calls per plan" in text
    assert "| 600/s | 238, 158 | 109, 87 | **0.49** |" in text
    assert (
        "`python -m grpc_resilience_mesh.bench.loadgen_bench --rate 600 --calls 6000 --rounds 2`"
        in text
    )


def test_console_cpu_results_rewrites_the_block_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grpc_resilience_mesh.bench import console_cpu

    measured = {
        "requests": 2000,
        "rounds": 2,
        "concurrency": 16,
        "closed": {"mesh_cpu_ms_per_request": 3.17, "seconds": 15.0, "by_round": [3.1, 3.24]},
        "open": {"mesh_cpu_ms_per_request": 3.02, "seconds": 15.0, "by_round": [3.0, 3.04]},
        "idle_mesh_cpu_ms_per_s": {"closed": 12.2, "open": 20.5},
        "change": 3.02 / 3.17 - 1,
    }
    monkeypatch.setattr(console_cpu, "run", lambda *args: measured)
    page = tmp_path / "console-cpu.md"
    _page(page)
    console_cpu.main(["--requests", "2000", "--rounds", "2", "--results", str(page)])
    text = _kept_around(page)
    assert "| open | 20.5 | 3.02 | 3.00, 3.04 |" in text
    assert "**+8.3 ms of CPU a second** idle (+0.83% of a core)" in text
    assert "under load **-4.7%** per GetHome" in text
    assert "--requests 2000 --concurrency 16 --rounds 2 --idle-s 10" in text
