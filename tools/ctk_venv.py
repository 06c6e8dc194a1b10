"""A Chaos Toolkit venv beside the peers (.peers/ctk): `chaos run` and `chaos report` with
chaostoolkit-toxiproxy, the reporting plugin, pandoc (pypandoc-binary), the mesh's own
dependencies and, on its path, this repo and its extension (integrations/chaosmesh).

    python -m tools.ctk_venv [--dir DIR]

chaostoolkit 1.20+ needs Python 3.12: a 3.12 interpreter (on PATH, or pyenv's) gets the
current release; without one, the running Python (3.11) gets the last release it can run,
chaostoolkit 1.19.0 with chaostoolkit-lib 1.44.0. The repo is put on the venv's path by a .pth
file, not installed, so an edit is seen at once and nothing is written into the work tree. A
stamp (`ctk.version`) records what was installed; a second run with the same wants costs
nothing. Exit status 0 when `chaos` is ready, 1 when an install failed (the reason printed).
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import hashlib
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from grpc_resilience_mesh.launch import otel_protos

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DIR = ROOT / ".peers" / "ctk"
EXTENSION = ROOT / "integrations" / "chaosmesh"
EXTRAS = ["chaostoolkit-toxiproxy~=0.3.1", "chaostoolkit-reporting~=0.18.0", "pypandoc-binary"]
CTK_312 = ["chaostoolkit~=1.21", "chaostoolkit-lib~=1.45"]
CTK_311 = ["chaostoolkit==1.19.0", "chaostoolkit-lib==1.44.0"]
PIP_TIMEOUT_S = 900


def python_312() -> str | None:
    """A Python 3.12 interpreter that runs: on PATH, else pyenv's newest 3.12."""
    found = [shutil.which("python3.12") or ""]
    found += sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.12*/bin/python3.12")))[::-1]
    for candidate in filter(None, found):
        probe = subprocess.run([candidate, "-c", "print(1)"], capture_output=True, text=True)
        if probe.returncode == 0:  # pyenv's shim on PATH fails where 3.12 is not selected
            return candidate
    return None


LIBRARY = "grpc-aio-resilience"


def wants(python: str) -> list[str]:
    """What is installed: Chaos Toolkit for this Python, its plugins, the mesh's dependencies."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version_info[:2] >= (3, 12))"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    # The resilience library comes from the repository, on the path below (not from an index).
    needs = [d for d in project["dependencies"] if not d.startswith(LIBRARY)]
    return [*(CTK_312 if version == "True" else CTK_311), *EXTRAS, *needs]


def path_entries() -> list[Path]:
    """What the venv's .pth puts on sys.path: the project's packages, the resilience library's
    and the extension's, from this clone (no install of them)."""
    return [ROOT, ROOT / "libs" / LIBRARY / "src", EXTENSION]


def stamp_of(python: str, packages: list[str]) -> str:
    return hashlib.sha256("\n".join([python, *packages]).encode()).hexdigest()[:16]


def chaos_binary(venv: Path) -> Path:
    return venv / "bin" / "chaos"


def ensure(venv: Path = DEFAULT_DIR) -> Path:
    """The venv's `chaos`, made or brought up to date; RuntimeError says why it could not be.
    One at a time: two `make peers` at once (a rehearsal's beside CI's) wait for each other
    instead of one using a venv the other is still making."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure(venv)


def _has_pip(venv: Path) -> bool:
    probe = [str(venv / "bin" / "python"), "-m", "pip", "--version"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def installers(venv: Path) -> list[list[str]]:
    """The commands that install into `venv`, in the order tried: uv where the running
    interpreter's venv has it (the project's .venv does: `make venv` installs it), then pip.
    Both byte-compile (pip by default): under PYTHONDONTWRITEBYTECODE=1 nothing else would,
    and every `chaos run` would compile its imports again."""
    python = str(venv / "bin" / "python")
    uv = Path(sys.executable).parent / "uv"
    pip = [python, "-m", "pip", "install", "--quiet"]
    if not uv.is_file():
        return [pip]
    flags = ["--quiet", "--native-tls", "--compile-bytecode", "--python", python]
    return [[str(uv), "pip", "install", *flags], pip]


def _install(venv: Path, packages: list[str]) -> None:
    """`packages` into `venv` with the first installer that succeeds. uv fetches and unpacks in
    parallel: the Chaos Toolkit's set (the mesh's dependencies included) took 34 s with uv and
    119 s with pip on this project's machine (2026-12-04, both at nice 19 beside a busy run)."""
    why = ""
    for command in installers(venv):
        try:
            done = subprocess.run(
                [*command, *packages], capture_output=True, text=True, timeout=PIP_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            why = f"{Path(command[0]).name} took over {PIP_TIMEOUT_S} s"
            continue
        if done.returncode == 0:
            return
        why = f"{' '.join(packages[:2])}: {done.stderr.strip()[-800:]}"
    raise RuntimeError(f"install {why}")


def _ensure(venv: Path) -> Path:
    python = python_312() or sys.executable
    packages = wants(python)
    stamp = venv / "ctk.version"
    want = stamp_of(python, [*packages, *map(str, path_entries())])  # a new path: a new venv
    if stamp.is_file() and stamp.read_text().split()[0] == want and chaos_binary(venv).exists():
        return chaos_binary(venv)
    if not (venv / "bin" / "python").exists() or not _has_pip(venv):
        # --clear: a venv left without pip (a run killed while making it) is made again
        made = subprocess.run(
            [python, "-m", "venv", "--clear", str(venv)], capture_output=True, text=True
        )
        if made.returncode != 0:
            raise RuntimeError(f"{python} -m venv {venv}: {made.stderr.strip()}")
    _install(venv, packages)
    # a venv made while grpcio-csds was a base dependency still holds xds-protos's files
    why = otel_protos.repair(str(venv / "bin" / "python"))
    if why is not None:
        raise RuntimeError(f"opentelemetry-proto: {why}")
    site = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ],
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "grpc_resilience_mesh.pth").write_text("".join(f"{p}\n" for p in path_entries()))
    stamp.write_text(f"{want} {' '.join(packages[:2])}\n")
    return chaos_binary(venv)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args(argv)
    try:
        chaos = ensure(args.dir)
    except RuntimeError as err:
        print(f"ctk venv: {err}", file=sys.stderr)
        return 1
    print(f"ctk venv: {chaos} ready")
    return 0


if __name__ == "__main__":
    sys.exit(main())
