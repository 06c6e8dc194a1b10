"""The generated reference pages (docs/reference/) say what the code says now."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from grpc_resilience_mesh.chaos.experiment.loading import catalogue
from grpc_resilience_mesh.services.telemetry.metrics import MeshMetrics
from tools.docs_reference import environment, metrics, spans
from tools.docs_reference.generate import main, pages, stale_pages
from tools.docs_reference.sources import DOCS


def test_committed_reference_pages_are_current() -> None:
    stale = [str(p.relative_to(DOCS.parents[1])) for p in stale_pages()]
    assert stale == [], f"regenerate with `python -m tools.docs_reference --write`: {stale}"


def test_a_changed_page_is_reported_stale(tmp_path: Path) -> None:
    for path, text in pages(tmp_path).items():
        path.write_text(text, encoding="utf-8")
    assert stale_pages(tmp_path) == []
    (tmp_path / "metrics.md").write_text("# Metrics\n\nedited by hand\n", encoding="utf-8")
    (tmp_path / "catalogue.md").unlink()
    assert sorted(p.name for p in stale_pages(tmp_path)) == ["catalogue.md", "metrics.md"]


def test_check_exits_1_naming_a_stale_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--write"], out=tmp_path, docs=tmp_path) == 0
    assert main(["--check"], out=tmp_path, docs=tmp_path) == 0
    (tmp_path / "spans.md").write_text("old\n", encoding="utf-8")
    assert main(["--check"], out=tmp_path, docs=tmp_path) == 1
    assert f"stale: {tmp_path / 'spans.md'}" in capsys.readouterr().out


def test_every_metric_a_service_registers_is_listed() -> None:
    registry = CollectorRegistry()
    MeshMetrics(registry, "gateway")
    scraped = {m.name for m in registry.collect()}
    page = metrics.page()
    for name in scraped:
        assert f"`{name}" in page, name
    assert (
        "| `mesh_breaker_state` | gauge | dependency, method | 0 closed, 1 half-open, 2 open. |"
        in page
    )
    assert "`mesh_jobs_failed_total` | counter | queue, reason" in page
    assert "`mesh_bulkhead_in_use` | gauge | dependency" in page


def test_environment_rows_carry_the_default_and_the_rule() -> None:
    rows = {row[0]: row for row in environment.modelled()}
    assert rows["SHUTDOWN_GRACE_S"][1:3] == ("`5.0`", "a number within 0..3600")
    assert rows["LISTEN_ADDR"][2].startswith("HOST:PORT")
    assert rows["NOTIFY_DRILLS"][2] == "one of 0, 1"
    assert rows["MESH_TLS"][1:] == (
        "`off`",
        "a flag (1, true, yes, on or 0, false, no, off)",
        "on: the services behind the gateway speak only TLS",
        "grpc_resilience_mesh.services.runtime.tls",
    )
    assert rows["RECEIPT_KEEP_FAILED"][1:3] == ("`10000`", "an integer >= 1")
    assert rows["MESH_STATE_DIR"][4] == "grpc_resilience_mesh.client.state"


def test_every_variable_is_declared_once_and_none_is_read_without_one() -> None:
    names = [row[0] for row in environment.modelled()]
    assert sorted(set(names)) == names
    assert all(row[3] for row in environment.modelled()), "a declaration without its help"
    assert environment.read_directly() == []


STRAYS = {
    "reads.py": """
import os
from grpc_resilience_mesh.services import settings

STATE = "MESH_STATE_DIR"
LEVEL = settings.Var("STRAY_LEVEL", settings.text, "", "declared here, read raw below")


def config(environ):
    policy = (os.environ if environ is None else environ).get("MESH_POLICY")
    state, raw = os.getenv(STATE), os.environ["STRAY_RAW"]
    level, fine = environ.get(LEVEL.name), LEVEL.read(environ)
    named = settings.read(environ, "STRAY_UNDECLARED", settings.text, "")
    listen = settings.read(environ, "LISTEN_ADDR", settings.address, None)
    child = {**os.environ}
    child["MESH_POLICY"] = "full"
    return policy, state, raw, level, fine, named, listen, child
""",
    "elsewhere.py": """
import os
from strays.reads import STATE as DIR

where = os.environ.get(DIR, "var")
""",
}


def test_every_read_that_skips_its_declaration_is_listed(tmp_path: Path) -> None:
    package = tmp_path / "strays"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in STRAYS.items():
        (package / name).write_text(text)
    found = dict(environment.read_directly([package]))
    assert found == {
        # declared variables read raw: their rule and start-up refusal skipped
        "MESH_POLICY": "`strays.reads`",
        "MESH_STATE_DIR": "`strays.elsewhere`, `strays.reads`",  # by a constant, imported too
        "STRAY_LEVEL": "`strays.reads`",  # by its Var's name
        # read without any declaration
        "STRAY_RAW": "`strays.reads`",
        "STRAY_UNDECLARED": "`strays.reads`",
    }


def test_the_embedded_toxiproxy_parses_its_own_and_the_page_says_which() -> None:
    page = environment.page()
    assert "reads `MESH_PROXY_LOOP` and `MESH_TOXIPROXY_TOKEN`." in page


def test_span_events_list_their_attributes() -> None:
    found = {event: attrs for event, attrs, _ in spans.events()}
    assert found["retry scheduled"] == "mesh.attempt, mesh.delay_s, mesh.pushback_s, mesh.reason"
    assert found["breaker opened"].split(", ") == [
        "mesh.breaker_scope",
        "mesh.dependency",
        "mesh.from_state",
        "mesh.time_until_probe_s",
    ]
    assert "mesh.deadline_left_s" in found["deadline clamped"]
    assert {"receipt sent", "job failed", "fallback served", "call shed"} <= set(found)


def test_catalogue_page_has_every_hypothesis_and_lesson() -> None:
    page = pages()[DOCS / "catalogue.md"]
    for path, exp in catalogue():
        assert f"\n## {path.stem}\n" in page
        assert " ".join(exp.hypothesis.split()) in page
        assert " ".join(exp.lesson.split()) in page
