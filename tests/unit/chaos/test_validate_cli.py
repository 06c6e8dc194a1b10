"""`mesh chaos validate`, and `mesh chaos run` refusing bad input before anything starts."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from chaos.cli.app import app
from chaos.experiment.model import EXPERIMENTS_DIR

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
