"""deploy/Dockerfile and /.dockerignore: a slim multi-stage image, non-root, runtime
dependencies only, SERVICE choosing the service, and a build context that holds what it needs."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from grpc_resilience_mesh.services.topology import SERVICES
from tests.unit.deploy.deploy_sources import DOCKERFILE, DOCKERIGNORE, ROOT

Instruction = tuple[str, str]
NUMBERS = {4: "four", 5: "five", 6: "six", 7: "seven"}


def instructions() -> list[Instruction]:
    """(KEYWORD, arguments) with line continuations joined and comments dropped."""
    lines = [
        line for line in DOCKERFILE.read_text().splitlines() if not line.lstrip().startswith("#")
    ]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    return [
        (kw.upper(), rest.strip())
        for kw, _, rest in (
            line.strip().partition(" ") for line in joined.splitlines() if line.strip()
        )
    ]


def stages() -> list[list[Instruction]]:
    result: list[list[Instruction]] = []
    for instruction in instructions():
        if instruction[0] == "FROM":
            result.append([])
        if result:
            result[-1].append(instruction)
    return result


def build_args() -> dict[str, str]:
    return dict(arg.split("=", 1) for kw, arg in instructions() if kw == "ARG" and "=" in arg)


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    parts = []
    for token in re.split(r"(\*\*/?|\*|\?)", pattern.strip("/")):
        if token.startswith("**"):
            parts.append("(?:.*/)?" if token == "**/" else ".*")
        elif token == "*":
            parts.append("[^/]*")
        elif token == "?":
            parts.append("[^/]")
        else:
            parts.append(re.escape(token))
    return re.compile("".join(parts) + r"\Z")


def in_build_context(path: str) -> bool:
    """Docker's rules: the last matching .dockerignore line wins; a line that matches a parent
    directory matches everything under it."""
    rules = [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    included = True
    for rule in rules:
        negated = rule.startswith("!")
        regex = _pattern_regex(rule.lstrip("!"))
        if any(regex.match(prefix) for prefix in prefixes):
            included = negated
    return included


def context_files() -> list[Path]:
    files: list[Path] = []
    for top in sorted(ROOT.iterdir()):
        if not in_build_context(top.name):
            continue
        candidates = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        files += [p for p in candidates if in_build_context(p.relative_to(ROOT).as_posix())]
    return files


def test_image_is_multi_stage_on_a_slim_python_base() -> None:
    built = stages()
    assert len(built) >= 2
    base = build_args()["PYTHON_IMAGE"]
    assert re.fullmatch(r"python:3\.1[1-9](\.\d+)?-slim(-\w+)?", base), base
    for stage in built:
        assert stage[0][1].split()[0] == "${PYTHON_IMAGE}"


def test_runtime_stage_runs_as_a_numeric_non_root_user() -> None:
    runtime = stages()[-1]
    users = [arg for kw, arg in runtime if kw == "USER"]
    assert users, "the last stage sets no USER"
    uid = users[-1].split(":")[0]
    uid = build_args().get(uid.strip("${}"), uid) if uid.startswith("$") else uid
    assert uid.isdigit() and int(uid) > 0, uid


def test_only_runtime_dependencies_are_installed() -> None:
    text = " ".join(arg for _, arg in instructions())
    assert "[dev]" not in text and "[tools" not in text and "grpcio-tools" not in text
    runs = [arg for kw, arg in stages()[0] if kw == "RUN"]
    # the resilience library from the repository (no index has it), then the services
    assert any(
        re.search(r"pip .*install --no-deps \./libs/grpc-aio-resilience \.$", run) for run in runs
    ), runs
    assert any("install -r /tmp/services.txt" in run for run in runs), runs
    copied_from_build = [arg for kw, arg in stages()[-1] if kw == "COPY"]
    assert copied_from_build == ["--from=build /opt/venv /opt/venv"]


def test_the_image_header_counts_every_service() -> None:
    header = DOCKERFILE.read_text().splitlines()[1]
    assert f"One image for the {NUMBERS[len(SERVICES)]} services" in header, header


def test_service_variable_selects_one_of_the_services() -> None:
    (entrypoint,) = [arg for kw, arg in instructions() if kw == "ENTRYPOINT"]
    assert 'exec python -m \\"grpc_resilience_mesh.services.${SERVICE' in entrypoint
    for name in (s.name for s in SERVICES):
        module = f"grpc_resilience_mesh.services.{name}.__main__"
        assert importlib.util.find_spec(module) is not None, name
        assert name in entrypoint  # named in the error a missing SERVICE prints


def test_every_copied_path_is_in_the_build_context() -> None:
    for kw, arg in instructions():
        if kw == "COPY" and not arg.startswith("--from"):
            *sources, _ = arg.split()
            for source in sources:
                assert (ROOT / source).exists(), source
                assert in_build_context(source.rstrip("/")), f"{source} is in .dockerignore"


def test_dockerignore_keeps_local_state_out() -> None:
    for path in (
        ".venv/bin/python",
        ".git/HEAD",
        "var/mesh.json",
        "tests/conftest.py",
        "grpc_resilience_mesh/services/__pycache__/x.cpython-311.pyc",
        ".env",
    ):
        assert not in_build_context(path), path
    assert in_build_context("grpc_resilience_mesh/services/runtime/server.py")


def wheel_names(source: Path, dist: Path) -> set[str]:
    """The files of the wheel `pip install` builds from source (a copy: setuptools writes
    build/ and *.egg-info beside what it builds)."""
    result = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"),
            *("--no-index", "--quiet", "--wheel-dir", str(dist), str(source)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = dist.glob("*.whl")
    return set(zipfile.ZipFile(wheel).namelist())


def top_level_packages(names: set[str]) -> set[str]:
    return {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}


def test_build_context_alone_builds_a_wheel_with_every_service(tmp_path: Path) -> None:
    """What `pip install .` does in the build stage, on exactly the files Docker would send."""
    context = tmp_path / "context"
    for path in context_files():
        target = context / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    names = wheel_names(context, tmp_path / "dist")
    services = "grpc_resilience_mesh/services"
    for name in (s.name for s in SERVICES):
        assert f"{services}/{name}/__main__.py" in names
    assert f"{services}/runtime/healthcheck.py" in names
    assert any(n.startswith(f"{services}/policies/") and n.endswith(".yaml") for n in names)
    assert top_level_packages(names) == {"grpc_resilience_mesh"}


def test_a_checkout_builds_a_wheel_of_grpc_resilience_mesh_alone(tmp_path: Path) -> None:
    """`pip install .` from a whole checkout, tests/ and tools/ beside the package: the wheel's
    one top-level package is ours (no tests, no tools, no name another project has)."""
    checkout = tmp_path / "checkout"
    ignored = shutil.ignore_patterns(
        "__pycache__", "*.egg-info", "build", "dist", "site", "var", "reports"
    )
    for top in ROOT.iterdir():
        if top.name.startswith(".") or ignored(str(ROOT), [top.name]):
            continue
        if top.is_dir():
            shutil.copytree(top, checkout / top.name, ignore=ignored, symlinks=True)
        else:
            shutil.copy2(top, checkout / top.name)
    assert (checkout / "tests").is_dir()
    names = wheel_names(checkout, tmp_path / "dist")
    assert "grpc_resilience_mesh/services/gateway/__main__.py" in names
    assert top_level_packages(names) == {"grpc_resilience_mesh"}


def test_the_image_installs_the_services_group_and_no_tooling(tmp_path: Path) -> None:
    """The build stage's own command, run here: it lists pyproject's services group, which
    has no CLI library (typer, rich, matplotlib) though the base install has them."""
    (run,) = [arg for kw, arg in stages()[0] if kw == "RUN" and "/tmp/services.txt" in arg]
    listing = run.split(" && ")[0].replace("/tmp/services.txt", str(tmp_path / "s.txt"))
    listing = listing.replace("python ", f"{sys.executable} ", 1)
    subprocess.run(["/bin/sh", "-c", listing], cwd=ROOT, check=True, timeout=30)
    listed = (tmp_path / "s.txt").read_text().splitlines()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    group = project["dependency-groups"]["services"]
    # the library is installed from libs/ by the next command, not from an index
    assert listed == [r for r in group if not r.startswith("grpc-aio-resilience")]
    assert len(listed) == len(group) - 1
    assert "grpcio~=1.85.0" in listed
    assert not [r for r in listed if r.startswith(("typer", "rich", "matplotlib", "aiohttp"))]
