"""`python -m tests.support.traced_cli OUT ARGS...`: runs `mesh ARGS...` in this process, as the
`mesh` script would, with tests.support.call_trace armed for all of it, and writes the product
files the command crossed (and its exit code) to OUT as JSON.

A process of its own so that what crosses a file is the command alone: in a test worker, another
test may already have filled a cache the command would otherwise fill. Processes the command
starts (the services, the load generator, the report worker) are not traced: their files are on
their own routes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from grpc_resilience_mesh.cli.entry import main
from tests.support.call_trace import CallTrace, installed


def traced(args: list[str]) -> tuple[list[str], int]:
    """The files `mesh ARGS` crosses in this process, and its exit code."""
    sys.argv = ["mesh", *args]
    code: int | str | None = 0
    with installed(CallTrace()) as trace, trace.armed_for():
        try:
            main()
        except SystemExit as exit_:
            code = exit_.code
    return trace.files, (code or 0) if isinstance(code, int | None) else 1


if __name__ == "__main__":
    out, *command = sys.argv[1:]
    files, exit_code = traced(command)
    Path(out).write_text(json.dumps({"files": files, "exit_code": exit_code}))
