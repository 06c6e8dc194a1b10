"""`mesh chaos validate` bounds what made a file validate or run without end: a sweep's points,
the variants, the planned time, every scenario's params, an app fault's pushback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import Field
from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.experiment import sweep
from grpc_resilience_mesh.chaos.experiment.model import EXPERIMENTS_DIR, Experiment, Variant
from grpc_resilience_mesh.chaos.experiment.planned import planned_loads_s
from grpc_resilience_mesh.chaos.registry import (
    SCENARIOS,
    ScenarioContext,
    ScenarioParams,
    ScenarioResult,
    scenario,
)
from grpc_resilience_mesh.chaos.results import VariantResult
from grpc_resilience_mesh.chaos.run.runner import Runner
from grpc_resilience_mesh.chaos.run.scenario_run import run_scenario
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.services.faults.injection import FaultSpec, FaultValidationError


def invoke(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(app, ["chaos", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output.splitlines()


def sweep_file(tmp_path: Path, points: list[str], lines: int = 1) -> Path:
    """Flow style: 10,000 points still fit the 64 KiB an experiment file may hold."""
    variants = ", ".join(f"{{name: line{i}}}" for i in range(lines))
    path = tmp_path / "sweep.yaml"
    path.write_text(
        "title: t\nhypothesis: h\n"
        f"sweep: {{workers: 20, service_time_s: 1.0, points: [{','.join(points)}]}}\n"
        f"variants: [{variants}]\n"
    )
    return path


def test_a_10000_point_sweep_is_refused_before_a_point_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def built(*args: object) -> dict[str, Any]:
        raise RuntimeError("a point was built: the file is validated point by point")

    monkeypatch.setattr(sweep, "_point", built)
    path = sweep_file(tmp_path, [f".{i:04d}" for i in range(1, 10_000)] + ["1"])
    assert path.stat().st_size < 64 * 1024
    code, lines = invoke("validate", str(path))
    assert code == 2
    assert lines == [
        f"invalid {path}: sweep.points: Value error, 10000 points, at most 50: a curve is read "
        "from a handful (the catalogue's has 5), and each point is a variant of every line"
    ]


def test_lines_times_points_beyond_100_variants_are_refused(tmp_path: Path) -> None:
    path = sweep_file(tmp_path, [f"{0.05 * i:.2f}" for i in range(1, 22)], lines=5)
    code, lines = invoke("validate", str(path))
    assert code == 2
    assert "variants: 5 lines x 21 points = 105 variants, at most 100" in lines[0], lines


def test_a_file_of_101_variants_is_refused_and_100_are_not(tmp_path: Path) -> None:
    found = {}
    for count in (101, 100):
        names = [{"name": f"v{i}"} for i in range(count)]
        path = tmp_path / f"{count}.yaml"
        path.write_text(yaml.safe_dump({"title": "t", "hypothesis": "h", "variants": names}))
        found[count] = invoke("validate", str(path))
    assert found[100] == (0, [f"OK      {tmp_path / '100.yaml'}"])
    code, lines = found[101]
    assert code == 2
    assert "<top>: Value error, variants: 101 variants, at most 100" in lines[0], lines


def long_loads(variants: int) -> dict[str, Any]:
    """Each variant's fault load closed loop, one call at a time, for its 600 s cap."""
    return {
        "title": "t",
        "hypothesis": "h",
        "load": {"requests": 20_000, "concurrency": 1, "max_duration_s": 600},
        "variants": [{"name": f"v{i}"} for i in range(variants)],
    }


def test_an_experiment_planned_past_an_hour_is_refused_as_mesh_chaos_plan_counts_it(
    tmp_path: Path,
) -> None:
    fits, too_long = long_loads(5), long_loads(7)
    assert planned_loads_s(Experiment.model_validate(fits)) <= 3600
    assert planned_loads_s(Experiment.model_validate(too_long)) > 3600
    for name, doc in (("fits", fits), ("long", too_long)):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(doc))
    code, lines = invoke("validate", str(tmp_path / "fits.yaml"), str(tmp_path / "long.yaml"))
    assert code == 2
    assert lines[0] == f"OK      {tmp_path / 'fits.yaml'}"
    assert lines[1].startswith(f"invalid {tmp_path / 'long.yaml'}: planned time: 70 min for 7 ")
    assert "above the 60 min one experiment may plan" in lines[1]


APP = """
title: t
hypothesis: h
faults:
  - {type: app_fault, service: recommendation, method: Recommend, pushback_ms: PUSHBACK}
variants: [{name: full}]
"""


@pytest.mark.parametrize("pushback_ms", [-1, 0, 600_000, 600_001, 10**12])
def test_pushback_ms_is_what_the_fault_admin_accepts(tmp_path: Path, pushback_ms: int) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(APP.replace("PUSHBACK", str(pushback_ms)))
    code, _ = invoke("validate", str(path))
    try:
        FaultSpec.parse("*", 1.0, "UNAVAILABLE", 0.0, pushback_ms)
        admin_accepts = True
    except FaultValidationError:
        admin_accepts = False
    assert (code == 0) == admin_accepts


Change = Callable[[dict[str, Any]], object]

BAD_PARAMS: list[tuple[str, Change, str]] = [
    (
        "criticality",
        lambda d: d["params"].update(critical_share=0),
        "params.critical_share: Input should be greater than 0 (range (0, 1])",
    ),
    (
        "criticality",
        lambda d: d["params"].update(critical_share="lots"),
        "params.critical_share: Input should be a valid number",
    ),
    (
        "criticality",
        lambda d: d["params"].update(pool={"workers": 20, "service_time_s": 0}),
        "params.pool.service_time_s: Input should be greater than 0 (range (0, 60])",
    ),
    (
        "criticality",
        lambda d: d["params"].update(pool={"workers": -3, "service_time_s": 1}),
        "params.pool.workers: Input should be greater than or equal to 1 (range [1, 10000])",
    ),
    (
        "criticality",
        lambda d: d["params"].update(deadline_s=1e300),
        "params.deadline_s: Input should be less than or equal to 60 (range (0, 60])",
    ),
    (
        "criticality",
        lambda d: d["params"].update(deadline_s=10),
        "deadline_s 10 must be at most duration_s 8 (what the scenario's load lasts)",
    ),
    (
        "criticality",
        lambda d: d["params"].update(warmup_s=8),
        "warmup_s 8 must be below duration_s 8",
    ),
    (
        "criticality",
        lambda d: d["params"].update(pool={"workers": 10_000, "service_time_s": 1}),
        "rate_x_capacity x the pool's capacity = 60000 calls/s, at most 5000",
    ),
    (
        "criticality",
        lambda d: d["params"].update(critical_shar=0.5),
        "params.critical_shar: unknown param; did you mean 'critical_share'?",
    ),
    (
        "receipt-throughput",
        lambda d: d["params"].update(jobs=10**9),
        "params.jobs: Input should be less than or equal to 1000 (range [1, 1000])",
    ),
    (
        "receipt-throughput",
        lambda d: d["params"].update(jobs=1000, job_s=10),
        "params with variants.0.params: jobs 1000 of job_s 10 at concurrency 1 take 10000 s in "
        "theory, at most 600 s",
    ),
    (
        "receipt-throughput",
        lambda d: d["variants"][0]["params"].update(concurrency=0),
        "variants.0.params.concurrency: Input should be greater than or equal to 1 "
        "(range [1, 100])",
    ),
    (
        "receipt-backoff",
        lambda d: d["params"].update(attempts=20, backoff_s=1),
        "the last of attempts 20 starts 524287 s after the first",
    ),
    (
        "stream-cut",
        lambda d: d["params"].update(code="UNAVAILABL"),
        "params.code: 'UNAVAILABL' is not a gRPC error code name; did you mean 'UNAVAILABLE'?",
    ),
    (
        "stream-cut",
        lambda d: d["params"].update(limit=51),
        "params.limit: Input should be less than or equal to 50 (range [1, 50])",
    ),
    (
        "poison-job",
        lambda d: d["variants"][0]["params"].update(max_stalled=-1),
        "variants.0.params.max_stalled: Input should be greater than or equal to 0 (range [0, 10])",
    ),
    (
        "false-stall",
        lambda d: d["params"].update(lock_ms=50),
        "params.lock_ms: Input should be greater than or equal to 100 (range [100, 60000])",
    ),
    (
        "worker-crash",
        lambda d: d["params"].update(smtp_latency_ms=-1),
        "params.smtp_latency_ms: Input should be greater than or equal to 0 (range [0, 60000])",
    ),
    (
        "duplicate-enqueue",
        lambda d: d["params"].update(settle_s=float("inf")),
        "params.settle_s: Input should be less than or equal to 60 (range [0, 60])",
    ),
    (
        "provider-outage",
        lambda d: d.update(params={"jobs": 3}),
        "params: only a scenario experiment reads params",
    ),
]


@pytest.mark.parametrize(
    ("name", "change", "says"),
    BAD_PARAMS,
    ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(BAD_PARAMS)],
)
def test_every_scenarios_params_are_validated_naming_the_field_and_range(
    tmp_path: Path, name: str, change: Change, says: str
) -> None:
    doc = yaml.safe_load((EXPERIMENTS_DIR / f"{name}.yaml").read_text())
    change(doc)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    code, lines = invoke("validate", str(path))
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"invalid {path}: "), lines
    assert says in lines[0], lines[0]


class _Knobs(ScenarioParams):
    n: int = Field(ge=1, le=5)
    label: str = "x"


async def test_a_scenario_reads_its_typed_params_the_variants_over_the_files() -> None:
    seen: list[_Knobs] = []

    @scenario("test-knobs", metrics=("n",), params=_Knobs)
    async def knobs(ctx: ScenarioContext) -> ScenarioResult:
        seen.append(ctx.params_as(_Knobs))
        return ScenarioResult({"n": float(ctx.params_as(_Knobs).n)})

    try:
        runner = Runner(Target("127.0.0.1:1", None, {}, {}), lambda *a: None)
        exp = Experiment(
            title="t",
            hypothesis="h",
            scenario="test-knobs",
            params={"n": 2, "label": "file"},
            variants=[Variant(name="v", params={"n": 3})],
        )
        result = await run_scenario(
            runner, exp, exp.variants[0], VariantResult(exp.variants[0], "full")
        )
        assert seen == [_Knobs(n=3, label="file")]
        assert result.phases["fault"].metrics == {"n": 3.0}
    finally:
        SCENARIOS.pop("test-knobs")


def test_params_for_a_scenario_that_takes_none_are_refused(tmp_path: Path) -> None:
    @scenario("test-bare", metrics=("n",))
    async def bare(ctx: ScenarioContext) -> ScenarioResult:
        return ScenarioResult({"n": 1.0})

    try:
        path = tmp_path / "bare.yaml"
        path.write_text(
            "title: t\nhypothesis: h\nscenario: test-bare\nparams: {n: 3}\nvariants: [{name: v}]\n"
        )
        code, lines = invoke("validate", str(path))
        assert code == 2
        assert lines == [f"invalid {path}: params.n: this scenario takes no params"]
    finally:
        SCENARIOS.pop("test-bare")
