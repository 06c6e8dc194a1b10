"""The metastable experiment's trigger, a `slowdown` fault: checked when the file loads, sent
to every replica's FaultAdmin as the pool's service_time_factor, and rolled back on every exit
path, a load that fails mid-phase included (real FaultAdmin servers on 127.0.0.1:0, a fake
load generator)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import grpc
import pytest

from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import ExperimentError, SlowdownFault
from grpc_resilience_mesh.chaos.run.faults import Injector
from grpc_resilience_mesh.chaos.run.runner import Runner
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.loadgen.in_process import LoadResult, Outcome
from grpc_resilience_mesh.loadgen.protocol import Plan
from grpc_resilience_mesh.services.faults.admin import FaultAdminServicer
from grpc_resilience_mesh.services.faults.injection import FaultTable
from grpc_resilience_mesh.services.v1 import admin_pb2_grpc
from tests.integration.resilience.servers import serving

EXPERIMENT = """
title: t
hypothesis: h
faults:
  - {{type: slowdown, {fields}}}
load: {{rpc: [home], requests: 10, concurrency: 2}}
variants: [{{name: full}}]
expectations: [{{variant: full, metric: ok, min: 10}}]
"""


def _experiment(tmp_path: Path, fields: str) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(EXPERIMENT.format(fields=fields))
    return path


def _admin(table: FaultTable) -> Callable[[grpc.aio.Server], None]:
    return partial(admin_pb2_grpc.add_FaultAdminServicer_to_server, FaultAdminServicer(table))


@pytest.mark.parametrize(
    ("fields", "wrong"),
    [
        ("factor: 1", "factor"),
        ("factor: 101", "factor"),
        ("service: profile, factor: 3", "service"),
    ],
)
def test_a_bad_slowdown_is_refused_at_load(tmp_path: Path, fields: str, wrong: str) -> None:
    with pytest.raises(ExperimentError, match=wrong):
        load_experiment(str(_experiment(tmp_path, fields)))


async def test_the_slowdown_reaches_every_replica_and_goes_at_its_end(tmp_path: Path) -> None:
    [fault] = load_experiment(str(_experiment(tmp_path, "factor: 3")))[1].faults
    assert isinstance(fault, SlowdownFault)
    tables = FaultTable(), FaultTable()
    async with serving(_admin(tables[0])) as one, serving(_admin(tables[1])) as two:
        injector = Injector(None, {"recommendation": one, "recommendation-2": two})
        await injector.set(0, fault, True)
        assert [t.service_time_factor() for t in tables] == [3.0, 3.0]
        await injector.set(0, fault, False)
    assert [t.list() for t in tables] == [[], []]


class FailingWhileSlow:
    """A load generator whose load breaks while the slowdown is on (and serves otherwise)."""

    def __init__(self, tables: tuple[FaultTable, ...]) -> None:
        self.tables = tables
        self.seen: list[float] = []

    async def run(self, plan: Plan, *_: object) -> LoadResult:
        factors = [t.service_time_factor() for t in self.tables]
        if max(factors) > 1.0:
            self.seen = factors
            raise RuntimeError("the load generator died")
        outcomes = [Outcome(r.rpc, "OK", 0.01) for r in plan.requests]
        return LoadResult(outcomes, elapsed_s=0.1)

    async def close(self) -> None:
        pass


async def test_a_run_that_fails_under_the_slowdown_still_rolls_it_back(tmp_path: Path) -> None:
    path = _experiment(tmp_path, "factor: 3")
    _, exp = load_experiment(str(path))
    tables = FaultTable(), FaultTable()
    async with serving(_admin(tables[0])) as one, serving(_admin(tables[1])) as two:
        admin = {"recommendation": one, "recommendation-2": two}
        target = Target("127.0.0.1:1", None, admin, {}, state_dir=tmp_path / "var")
        runner = Runner(target)
        generator = FailingWhileSlow(tables)
        runner.generator = generator  # type: ignore[assignment]
        result = await runner.run("slowdown", path, exp)
    assert generator.seen == [3.0, 3.0], "the load ran under the slowdown"
    assert result.aborted and "the load generator died" in result.aborted
    assert [t.service_time_factor() for t in tables] == [1.0, 1.0]
    assert [t.list() for t in tables] == [[], []]
