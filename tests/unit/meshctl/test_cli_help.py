"""The CLI's help is consistent: no `<bool>` beside a flag, one meaning of `--json`, a version."""

from __future__ import annotations

import re
from importlib.metadata import version
from typing import cast

import pytest
import typer
import typer.main
from typer import _click as click
from typer.core import TyperGroup
from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.cli.json_out import bare_json_to_stdout


def _commands(group: TyperGroup, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, TyperGroup):
            found += _commands(command, (*prefix, name))
        else:
            found.append((*prefix, name))
    return found


COMMANDS = _commands(cast(TyperGroup, typer.main.get_command(app)))


def _help(command: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_is_covered() -> None:
    names = {" ".join(c) for c in COMMANDS}
    assert {"call home", "chaos run", "demo", "jobs list", "traces", "bench overhead"} <= names


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "mesh")
def test_flags_show_no_type_and_json_means_one_thing(command: tuple[str, ...]) -> None:
    text = _help(command)
    assert "<bool>" not in text
    for line in text.splitlines():
        if re.search(r"--json\b", line):
            assert "PATH" in line and "JSON to PATH" in line, line


def test_version_comes_from_the_distribution() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"mesh {version('grpc-resilience-mesh')}"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["call", "home", "--json"], ["call", "home", "--json", "-"]),
        (["call", "home", "--json", "--user", "u"], ["call", "home", "--json", "-", "--user", "u"]),
        (["chaos", "run", "x", "--json", "out.json"], ["chaos", "run", "x", "--json", "out.json"]),
        (["jobs", "list", "--json", "-"], ["jobs", "list", "--json", "-"]),
    ],
)
def test_a_bare_json_means_stdout(argv: list[str], expected: list[str]) -> None:
    assert bare_json_to_stdout(argv) == expected
