"""`mesh chaos validate` loads what validating needs: the experiment model and the checks' and
scenarios' declarations, no launcher, no plotting, no runner (issue 42: "at most 60 of the
project's modules", counted over the application's namespace and the library together; 182
before the declarations and the lazy commands)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import typer.main
from typer import _click as click

from grpc_resilience_mesh.chaos.experiment.model import EXPERIMENTS_DIR
from grpc_resilience_mesh.chaos.registry import CHECKS, SCENARIOS, implementation
from grpc_resilience_mesh.cli.chaos_cmd import ChaosGroup, app
from grpc_resilience_mesh.cli.lazy import load

PROJECT = ("grpc_resilience_mesh", "grpc_aio_resilience")
MOST_PROJECT_MODULES = 60
NEVER = (
    "grpc_resilience_mesh.launch",
    "matplotlib",
    "aiohttp",
    "bullmq",
    "grpc_resilience_mesh.chaos.run.runner",
    "grpc_resilience_mesh.chaos.report",
)

# `python -m grpc_resilience_mesh.cli ARGS`, then every module the process holds, on stderr after a
# marker.
_PROBE = """
import atexit, runpy, sys
atexit.register(lambda: sys.stderr.write("MODULES\\n" + "\\n".join(sorted(sys.modules))))
sys.argv = ["mesh", *sys.argv[1:]]
runpy.run_module("grpc_resilience_mesh.cli", run_name="__main__", alter_sys=True)
"""


def _modules(*argv: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=120
    )
    _, _, listing = done.stderr.partition("MODULES\n")
    return done, set(listing.splitlines())


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_validate_imports_no_launcher_no_plots_and_few_of_our_modules() -> None:
    path = EXPERIMENTS_DIR / "deadline-budget.yaml"
    done, modules = _modules("chaos", "validate", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK" in done.stdout
    assert (
        "grpc_resilience_mesh.chaos.experiment.loading" in modules
    )  # the probe sees what the command imported
    assert _loaded(modules, NEVER) == []
    ours = _loaded(modules, PROJECT)
    assert len(ours) <= MOST_PROJECT_MODULES, ours


def test_the_declarations_are_the_registry_and_name_real_implementations() -> None:
    declared = (dict(CHECKS), dict(SCENARIOS))
    wheres = [c.fn for c in CHECKS.values()] + [s.fn for s in SCENARIOS.values()]
    for where in wheres:
        assert isinstance(where, str), where  # imported when a run calls it
        assert asyncio.iscoroutinefunction(implementation(where)), where
    assert (dict(CHECKS), dict(SCENARIOS)) == declared  # importing them registered nothing


def test_the_chaos_help_table_says_what_each_command_says() -> None:
    group = typer.main.get_group(app)
    assert group.list_commands(click.Context(group)) == list(ChaosGroup.lazy)
    for name, spec in ChaosGroup.lazy.items():
        real = load(name, spec.target)
        first = (real.short_help or real.help or "").split("\n\n")[0].strip()
        assert spec.short_help == first, name
