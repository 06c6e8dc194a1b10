"""Light commands import only what they need: `mesh --version`/`--help` start at once."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.core import TyperGroup
from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import MeshGroup, app
from grpc_resilience_mesh.cli.lazy import load

HEAVY = (
    "matplotlib",
    "numpy",
    "aiohttp",
    "grpc",
    "pydantic",
    "yaml",
    "grpc_resilience_mesh.chaos.report",
    "grpc_resilience_mesh.chaos.run.runner",
    "grpc_resilience_mesh.launch.mesh",
    "grpc_resilience_mesh.console",
    "rich",
)
NOT_FOR_CALL = (
    "matplotlib",
    "numpy",
    "grpc_resilience_mesh.chaos.run.runner",
    "grpc_resilience_mesh.chaos.report",
)

# The `mesh` script's own entry point, as pyproject.toml declares it (module:function).
_PYPROJECT = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())
ENTRY_MODULE, ENTRY_FUNCTION = _PYPROJECT["project"]["scripts"]["mesh"].split(":")

_PROBE = f"""
import sys
from {ENTRY_MODULE} import {ENTRY_FUNCTION} as main
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


def test_version_imports_no_cli_framework() -> None:
    """typer and its vendored click are ~0.1 s of CPU to import: `mesh --version` needs neither."""
    modules = _imported("--version")
    assert "importlib.metadata" in modules  # the probe can see what the command imported
    assert _loaded(modules, ("typer", "click", "rich")) == []


def test_call_home_needs_no_runner_plots_or_reports() -> None:
    modules = _imported("call", "home", "--help")
    assert "grpc_resilience_mesh.cli.call" in modules
    assert _loaded(modules, NOT_FOR_CALL) == []


def test_the_help_table_says_what_each_command_says(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, spec in MeshGroup.lazy.items():
        real = load(name, spec.target)
        first = (real.short_help or real.help or "").split("\n\n")[0].strip()
        assert spec.short_help == first, name
    lazy = _help_text()
    for spec in MeshGroup.lazy.values():  # whole, not cut to a line with "..."
        assert " ".join(spec.short_help.split()) in " ".join(lazy.split())
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


def test_help_reads_no_package_metadata() -> None:
    """importlib.metadata (email, zipfile, csv, ...) is only for --version: it was ~40 ms of
    `mesh --help` (grpc_resilience_mesh/bench/startup.py: 0.36 s against the 0.3 s target)."""
    assert "importlib.metadata" not in _imported("--help")
    assert "importlib.metadata" in _imported("--version")  # the probe can see it


def test_traces_id_imports_no_grpc(tmp_path: Path) -> None:
    """`mesh traces ID` reads files and calls nothing: grpc was ~0.1 s of its CPU."""
    (tmp_path / "gateway.jsonl").write_text("")
    modules = _imported("traces", "0" * 32, "--dir", str(tmp_path))
    assert (
        "grpc_resilience_mesh.client.traces" in modules
    )  # the probe can see the command's imports
    assert _loaded(modules, ("grpc",)) == []


def test_the_traces_status_names_are_grpcs() -> None:
    import grpc

    from grpc_resilience_mesh.client.traces import STATUS_NAMES

    assert {i: n for i, n in enumerate(STATUS_NAMES)} == {
        c.value[0]: c.name for c in grpc.StatusCode
    }
