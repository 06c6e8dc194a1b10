"""Light commands import only what they need: `mesh --version`/`--help` start at once."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.core import TyperGroup
from typer.testing import CliRunner

from meshctl.cli.app import MeshGroup, app
from meshctl.cli.lazy import load

HEAVY = (
    "matplotlib",
    "numpy",
    "aiohttp",
    "grpc",
    "pydantic",
    "yaml",
    "chaos.report",
    "chaos.run.runner",
    "meshctl.launch.mesh",
    "meshctl.console",
)
NOT_FOR_CALL = ("matplotlib", "numpy", "chaos.run.runner", "chaos.report")

_PROBE = """
import sys
from meshctl.cli.app import main
sys.argv = ['mesh', *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
sys.stderr.write('\\n'.join(sorted(sys.modules)))
"""


def _imported(*argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=60
    )
    return set(done.stderr.splitlines())


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.parametrize("argv", [["--version"], ["--help"], []], ids=" ".join)
def test_version_and_help_import_nothing_heavy(argv: list[str]) -> None:
    assert _loaded(_imported(*argv), HEAVY) == []


def test_call_home_needs_no_runner_plots_or_reports() -> None:
    modules = _imported("call", "home", "--help")
    assert "meshctl.cli.call" in modules
    assert _loaded(modules, NOT_FOR_CALL) == []


def test_the_help_table_says_what_each_command_says(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, spec in MeshGroup.lazy.items():
        real = load(name, spec.target)
        first = (real.short_help or real.help or "").split("\n\n")[0].strip()
        assert spec.short_help == first, name
    lazy = _help_text()
    monkeypatch.setattr(MeshGroup, "format_help", TyperGroup.format_help)
    assert lazy == _help_text()


def _help_text() -> str:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0 and "Commands" in result.output
    return result.output


def test_a_lazy_command_runs_as_before() -> None:
    result = CliRunner().invoke(app, ["chaos", "--help"])
    assert result.exit_code == 0
    assert "validate" in result.output
