"""The `mesh` command line to suggest, written so that it works where it is pasted: `mesh` when
that is on the PATH and is this one, else the path it was run by (`.venv/bin/mesh`, since
`make` installs into .venv without putting it on the PATH), and the state dir named when it is
not the one the other commands find by themselves."""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from grpc_resilience_mesh.client.state import STATE_DIR


def mesh_program(argv0: str | None = None, path: str | None = None) -> str:
    """`mesh` if the PATH finds this very program under that name, else its path (relative to
    the working directory when under it)."""
    here = Path(argv0 if argv0 is not None else sys.argv[0])
    found = shutil.which("mesh", path=path)
    try:
        if found is not None and here.exists() and Path(found).samefile(here):
            return "mesh"
    except OSError:
        pass
    if here.name != "mesh" or not here.exists():
        return "mesh"  # not run as the `mesh` script (a test, python -m): nothing better known
    resolved = here.absolute()
    try:
        shown = str(resolved.relative_to(Path.cwd()))
    except ValueError:
        shown = str(resolved)
    return shlex.quote(shown if "/" in shown else f"./{shown}")


def state_dir_prefix(state_dir: Path, environ: Mapping[str, str] | None = None) -> str:
    """`MESH_STATE_DIR=DIR ` when the other commands would not find `state_dir` by themselves
    (they read $MESH_STATE_DIR, else var), else nothing."""
    found_by_default = Path(STATE_DIR.read(environ))
    if found_by_default.absolute() == state_dir.absolute():
        return ""
    return f"{STATE_DIR.name}={shlex.quote(str(state_dir))} "


def mesh_command(args: str, state_dir: Path, argv0: str | None = None) -> str:
    """`mesh ARGS` as one can paste it: the program that works, the state dir if needed."""
    return f"{state_dir_prefix(state_dir)}{mesh_program(argv0)} {args}"
