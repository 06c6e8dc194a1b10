"""`mesh chaos validate`, and `mesh chaos run` refusing bad input before anything starts."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from grpc_resilience_mesh.chaos.experiment.model import EXPERIMENTS_DIR
from grpc_resilience_mesh.cli.app import app

GOOD = """
title: t
hypothesis: h
faults:
  - {type: toxic, edge: gateway_to_profile, toxic: latency, attributes: {latency: 100}}
variants: [{name: full}]
expectations: [{variant: full, metric: p99_ms, max: 1000}]
"""

BAD = {
    "metric.yaml": GOOD.replace("metric: p99_ms", "metric: p99"),
    "toxic.yaml": GOOD.replace("{latency: 100}", "{latncy: 100}"),
    "preset.yaml": GOOD.replace("{name: full}", "{name: full, policy: ful}"),
    "escape.yaml": GOOD.replace("{name: full}", "{name: full, policy: ../../../../etc/x.yaml}"),
    "syntax.yaml": GOOD.replace("title: t", "title: [t"),
    "deep.yaml": "title: " + "[" * 2000 + "]" * 2000 + "\n",
    "toxicity.yaml": GOOD.replace("toxic: latency,", "toxic: latency, toxicity: 0.5,"),
}


def invoke(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(app, ["chaos", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output.splitlines()


def test_the_whole_catalogue_validates() -> None:
    code, lines = invoke("validate", "--all")
    shipped = sorted(EXPERIMENTS_DIR.glob("*.yaml"))
    assert code == 0, "\n".join(lines)
    assert sorted(lines) == sorted(f"OK      {p}" for p in shipped)  # one line each, all OK


def test_names_and_files_one_line_each_exit_2_if_any_is_bad(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    for name, text in BAD.items():
        (tmp_path / name).write_text(text)
    files = [str(tmp_path / name) for name in BAD]
    code, lines = invoke("validate", "provider-outage", str(tmp_path / "good.yaml"), *files)
    assert code == 2
    assert len(lines) == 2 + len(BAD)
    assert lines[0] == f"OK      {EXPERIMENTS_DIR / 'provider-outage.yaml'}"
    assert lines[1] == f"OK      {tmp_path / 'good.yaml'}"
    for path, line in zip(files, lines[2:], strict=True):
        assert line.startswith(f"invalid {path}: "), line
    assert "did you mean 'p99_ms'?" in lines[2]
    assert "did you mean 'latency'?" in lines[3]
    assert "did you mean 'full'?" in lines[4]
    assert "is outside the experiment's folder" in lines[5]
    assert "not valid YAML: line 3, column 11" in lines[6]
    assert "nesting deeper than" in lines[7]
    assert "toxicity 0.5 on gateway_to_profile: Toxiproxy rolls toxicity once per" in lines[8]


def test_an_unknown_name_is_one_line_and_exit_2() -> None:
    code, lines = invoke("validate", "provider-outag")
    assert code == 2
    assert lines[0].startswith("invalid provider-outag: no such experiment; did you mean")


def test_run_refuses_bad_files_before_starting_a_mesh(tmp_path: Path) -> None:
    for name, text in BAD.items():
        path = tmp_path / name
        path.write_text(text)
        code, lines = invoke("run", str(path), "--state-dir", str(tmp_path / "state"))
        assert code == 2, lines
        assert len(lines) == 1 and lines[0].startswith(f"error: {path}: "), lines
    assert not (tmp_path / "state").exists(), "no mesh was started"


def test_run_against_a_mesh_that_is_not_up_is_bad_input(tmp_path: Path) -> None:
    code, lines = invoke("run", "provider-outage", "--target", str(tmp_path / "mesh.json"))
    assert code == 2
    assert lines == [
        f"error: --target {tmp_path / 'mesh.json'}: no such file; is `mesh up` running?"
    ]


APP = """
title: t
hypothesis: h
faults:
  - {type: app_fault, service: recommendation, method: Recommend, start_s: 1, stop_s: 5}
variants: [{name: full}]
expectations: [{variant: full, metric: p99_ms, max: 1000}]
"""

OUT_OF_RANGE = {  # what `run` choked on or misread: each refused naming the field and its range
    "pushback.yaml": (
        APP.replace("stop_s: 5}", "stop_s: 5, pushback_ms: 600001}"),
        "faults.0.app_fault.pushback_ms: Input should be less than or equal to 600000",
    ),
    "latency.yaml": (
        GOOD.replace("{latency: 100}", "{latency: 100000000000000000000}"),
        "attributes.latency: must be >= 0 and <= 9223372036854 ms",
    ),
    "nan.yaml": (GOOD.replace("max: 1000", "max: .nan"), "max: must be a finite number"),
    "stop-before-start.yaml": (
        APP.replace("stop_s: 5", "stop_s: 0.5"),
        "stop_s 0.5 must be after start_s 1",
    ),
    "start-inf.yaml": (
        APP.replace("start_s: 1, stop_s: 5", "start_s: .inf"),
        "start_s: must be a finite number of seconds in [0, 6000]",
    ),
    "start-1e300.yaml": (
        APP.replace("start_s: 1, stop_s: 5", "start_s: 1.0e+300"),
        "start_s: must be a finite number of seconds in [0, 6000]",
    ),
    "after-the-load.yaml": (
        APP.replace("start_s: 1, stop_s: 5", "start_s: 90"),
        "faults.0.start_s 90 must be below the load's time cap, load.max_duration_s x "
        "load.repeat = 60 s",
    ),
    "abort-inf.yaml": (
        APP + "abort: {error_rate_above: 0.5, for_s: .inf}\n",
        "for_s: must be a finite number of seconds in [0.001, 6000]",
    ),
}


def test_validate_refuses_numbers_run_cannot_use_naming_field_and_range(tmp_path: Path) -> None:
    files = []
    for name, (text, _) in OUT_OF_RANGE.items():
        (tmp_path / name).write_text(text)
        files.append(str(tmp_path / name))
    code, lines = invoke("validate", *files)
    assert code == 2
    assert len(lines) == len(OUT_OF_RANGE), lines
    wants = [want for _, want in OUT_OF_RANGE.values()]
    for path, line, want in zip(files, lines, wants, strict=True):
        assert line.startswith(f"invalid {path}: "), line
        assert want in line, line


def test_run_refuses_the_same_numbers_before_starting_anything(tmp_path: Path) -> None:
    for name, (text, want) in OUT_OF_RANGE.items():
        path = tmp_path / name
        path.write_text(text)
        code, lines = invoke("run", str(path), "--state-dir", str(tmp_path / "state"))
        assert code == 2, lines
        assert len(lines) == 1 and lines[0].startswith(f"error: {path}: "), lines
        assert want in lines[0], lines
    assert not (tmp_path / "state").exists(), "no mesh was started"
