"""A command's help reads as prose at any width: the docstring's own line breaks inside a
paragraph are not the terminal's."""

from __future__ import annotations

from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.cli.lazy import reflow


def test_prose_paragraphs_join_and_lists_stay() -> None:
    text = (
        "First line\ncut here.\n\nSecond paragraph\ncut here.\n\nExamples:\n  mesh up\n  mesh demo"
    )
    assert reflow(text) == (
        "First line\ncut here.\n\nSecond paragraph cut here.\n\nExamples:\n  mesh up\n  mesh demo"
    )
    assert reflow("- a\n- b") == "- a\n- b"  # a first paragraph is typer's to join


def test_a_subcommands_help_is_not_cut_mid_sentence() -> None:
    wide = CliRunner().invoke(app, ["demo", "--help"], env={"COLUMNS": "200"}, terminal_width=200)
    assert wide.exit_code == 0, wide.output
    assert "retries, retry storms, breakers" in wide.output
