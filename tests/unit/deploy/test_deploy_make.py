"""deploy/compose.mk: the targets the lead's Makefile includes, with ports read from .env."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.deploy.deploy_sources import ROOT, read_dotenv

COMPOSE_MK = ROOT / "deploy" / "compose.mk"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def make(*args: str, **env: str) -> str:
    clean = {"PATH": os.environ.get("PATH", ""), **env}
    result = subprocess.run(
        ["make", "--no-print-directory", "-f", str(COMPOSE_MK), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env=clean,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_every_target_has_a_help_line() -> None:
    text = COMPOSE_MK.read_text()
    targets = re.findall(r"^([a-z][a-zA-Z_-]+):(?!=)", text, flags=re.M)
    documented = re.findall(r"^([a-z][a-zA-Z_-]+):.*## ", text, flags=re.M)
    assert set(documented) == {"compose-up", "down", "chaos", "traces", "compose-rehearsal"}
    assert set(targets) - set(documented) == {"venv"}


def test_chaos_runs_the_same_runner_with_compose_addresses() -> None:
    dotenv = read_dotenv()
    key = dotenv["MESH_API_KEYS"].split(",")[0]
    (command,) = [
        line
        for line in make("-n", "chaos", "EXP=provider-outage").splitlines()
        if "mesh chaos run" in line
    ]
    assert command == (
        ".venv/bin/mesh chaos run provider-outage --target "
        f"toxiproxy=http://127.0.0.1:{dotenv['TOXIPROXY_API_PORT']},"
        f"gateway=127.0.0.1:{dotenv['GATEWAY_PORT']},api_key={key}"
    )


def test_a_port_set_in_the_shell_wins_over_dotenv() -> None:
    assert "gateway=127.0.0.1:60051" in make("-n", "chaos", "EXP=x", GATEWAY_PORT="60051")


def test_traces_prints_the_jaeger_url() -> None:
    first = make("traces").splitlines()[0]
    assert first == f"http://localhost:{read_dotenv()['JAEGER_UI_PORT']}"


def test_compose_up_builds_and_waits_for_healthy() -> None:
    assert "docker compose up --detach --build --wait" in make("-n", "compose-up")
    assert "docker compose down --volumes" in make("-n", "down")


MAKEFILE = ROOT / "Makefile"
STAMP = ".venv/.installed"  # `-o STAMP`: never (re)install the venv from a test
NO_CACHE = "-p no:cacheprovider"


def run_make(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "-o", STAMP, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ.get("PATH", "")},
    )


def test_every_makefile_target_has_a_help_line() -> None:
    text = MAKEFILE.read_text()
    targets = set(re.findall(r"^([a-z][a-zA-Z_-]+):(?!=)", text, flags=re.M))
    documented = set(re.findall(r"^([a-z][a-zA-Z_-]+):.*## ", text, flags=re.M))
    assert targets == documented
    listed = run_make("help").stdout
    for target in documented:
        assert f"make {target} " in listed, target


def test_ci_runs_lint_typecheck_and_the_suite() -> None:
    text = (ROOT / ".ci" / "run").read_text().splitlines()
    lines = [line for line in text if line.strip() and not line.startswith("#")]
    assert "set -euo pipefail" in lines
    # The peers' build and the browser's install come before the suite, then the install tests
    # (from PyPI), the compose rehearsal and the k8s one last, all outside make test's budget
    # (each passes, saying why, where podman can be neither run nor installed, or no Go
    # toolchain builds the control plane).
    assert lines[-6:] == [
        "make lint typecheck",
        "make peers browser",
        "make test",
        "make install-rehearsal",
        "make compose-rehearsal",
        "make k8s-rehearsal",
    ]


def test_make_test_skips_the_install_tests_and_the_rehearsal_runs_only_them() -> None:
    test = run_make("-n", "test")
    rehearsal = run_make("-n", "install-rehearsal")
    assert test.returncode == 0 and rehearsal.returncode == 0, test.stderr + rehearsal.stderr
    assert "MESH_INSTALL_REHEARSAL" not in test.stdout
    assert "MESH_INSTALL_REHEARSAL=1" in rehearsal.stdout and " -m install " in rehearsal.stdout


def test_lint_enforces_the_import_contracts_and_the_absence_of_cycles() -> None:
    result = run_make("-n", "lint")
    assert result.returncode == 0, result.stderr
    assert ".venv/bin/lint-imports" in result.stdout
    assert "-m tools.import_cycles grpc_resilience_mesh=grpc_resilience_mesh" in result.stdout
    assert "-m tools.code_shape libs grpc_resilience_mesh tests tools" in result.stdout


def test_install_brings_the_dev_extra() -> None:
    result = subprocess.run(  # -n: the recipe printed, never run
        ["make", "--no-print-directory", "-n", "-W", "pyproject.toml", STAMP],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    # the resilience library from the repository first: no index has it
    assert "pip install --quiet -e ./libs/grpc-aio-resilience -e '.[dev]'" in result.stdout, (
        result.stdout
    )


def test_the_demo_says_each_stage_and_how_long_it_took() -> None:
    """`make demo` used to sit silent through ~70 s of pip and up to 212 s of a Go build, the
    setuptools warning box its only output."""
    install = run_make("-n", "-W", "pyproject.toml", ".venv/.installed-tools").stdout
    assert 'echo "demo: [install] the package into .venv' in install
    assert "demo: [install] done in $((SECONDS - start)) s" in install
    assert "PYTHONWARNINGS='ignore:Editable installation:UserWarning'" in install
    demo = run_make("-n", "-o", ".venv/.installed-tools", "demo").stdout
    for stage in ("[go build] the Go load generator", "[go build] done in", "[start]"):
        assert f"demo: {stage}" in demo, demo
    assert demo.index("[start]") < demo.index(".venv/bin/mesh demo")


def test_the_demo_builds_the_load_generator_beside_the_install() -> None:
    """One after the other they added up (a cold Go build 26 s, the install 19 s); the build
    runs with the machine's python, since .venv may not exist yet."""
    demo = run_make("-n", "-o", ".venv/.installed-tools", "demo").stdout
    assert "-j2 .venv/.installed-tools demo-loadgen" in demo, demo
    build = next(line for line in demo.splitlines() if "-m tools.peers --only mesh-loadgen" in line)
    assert ".venv/bin/python" not in build, build
    assert demo.index("tools.peers") < demo.index("[start]")


def test_the_editable_warning_filter_silences_it_and_only_it() -> None:
    filters = {"PYTHONWARNINGS": "ignore:Editable installation:UserWarning"}
    code = (
        "import warnings\n"
        "class BuildBackendWarning(UserWarning): pass\n"
        "warnings.warn(BuildBackendWarning('Editable installation.\\n!!\\n****'))\n"
        "warnings.warn(UserWarning('something else'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **filters},
    )
    assert "Editable installation" not in done.stderr
    assert "something else" in done.stderr


def test_make_test_fails_when_no_test_ran(tmp_path: Path) -> None:
    # `-o`: neither build the Go peers nor install a browser from a test (both are
    # prerequisites of `test`, so `-o` reaches them; a recursive make would not see it).
    (tmp_path / "test_nothing_here.py").write_text('"""No tests."""\n')
    result = run_make("-o", "peers", "-o", "browser", "test", f"PYTEST_ARGS={tmp_path} {NO_CACHE}")
    assert "no tests ran" in result.stdout
    assert result.returncode != 0


def test_make_check_fails_when_no_test_ran(tmp_path: Path) -> None:
    (tmp_path / "test_nothing_here.py").write_text('"""No tests."""\n')
    result = run_make(
        "-o",
        "lint",
        "-o",
        "typecheck",
        "check",
        f"CHECK_TESTS={tmp_path}",
        f"PYTEST_ARGS={NO_CACHE}",
    )
    assert "no tests ran" in result.stdout
    assert result.returncode != 0


def test_check_is_lint_types_and_the_unit_and_integration_tests_only() -> None:
    result = run_make("-n", "check")
    assert result.returncode == 0, result.stderr
    commands = result.stdout.splitlines()
    assert ".venv/bin/mypy" in commands
    assert (
        ".venv/bin/ruff check libs grpc_resilience_mesh tests tools integrations examples"
    ) in commands
    (at,) = [i for i, line in enumerate(commands) if "-m pytest" in line]
    pytest_line = " ".join(part.strip(" \\\t") for part in commands[at : at + 2])
    assert pytest_line.endswith("-m pytest -n 4 tests/unit tests/integration tests/examples")
    assert "MESH_PEERS_BIN=" in pytest_line  # the tests of a real peer skip
    assert not [line for line in commands if "tools.peers" in line or "chromium" in line]


def test_make_test_builds_the_peers_and_the_browser_first() -> None:
    lines = run_make("-n", "test", "GO_DIR=/usr/local/go/bin").stdout.splitlines()
    peers = next(i for i, line in enumerate(lines) if "-m tools.peers" in line)
    suite = next(i for i, line in enumerate(lines) if "-m pytest" in line)
    assert peers < suite
    assert "chromium" in "\n".join(lines[peers:suite])
    assert not [
        line
        for line in run_make("-n", "test", "GO_DIR=").stdout.splitlines()
        if "-m tools.peers" in line
    ]
