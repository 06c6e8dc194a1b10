"""The `mesh` command's entry point: `mesh --version` answers before typer is imported.

typer (with its vendored click) is about 0.1 s of CPU to import, a third of the 0.3 s
`mesh --version` may take; every other command goes on to grpc_resilience_mesh.cli.app.
"""

from __future__ import annotations

import sys

from grpc_resilience_mesh.cli.version import version_line


def main() -> None:
    """`mesh`: the version at once, anything else through the Typer app."""
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(version_line() + "\n")
        return
    from grpc_resilience_mesh.cli.app import main as run

    run()
