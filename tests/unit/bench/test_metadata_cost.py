"""`python -m grpc_resilience_mesh.bench.metadata_cost`: the price of one metadata entry on a raw
grpc.aio call."""

from __future__ import annotations

import pytest

from grpc_resilience_mesh.bench.metadata_cost import cpu_per_call_us, main, report


async def test_each_variant_is_measured_in_every_round_and_the_entry_arrives() -> None:
    figures = await cpu_per_call_us(calls=20, rounds=2)
    assert set(figures) == {"no entry", "resilience-timeout-ms", "internal token"}
    assert all(len(v) == 2 and all(us > 0 for us in v) for v in figures.values())
    lines = report(figures)
    assert lines[1].split()[3:5] == ["1.000", "0.0"]  # the floor against itself


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--calls", "0"])
    assert exit_.value.code == 2
    assert "--calls and --rounds must be at least 1" in capsys.readouterr().err
