"""`mesh chaos stop`: the machine's chaos lever (grpc_resilience_mesh/chaos/topology/lever.py)
pulled or released, and said so."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from grpc_resilience_mesh.chaos.topology.lever import WATCH_EVERY_S, lever_path, pull, release
from grpc_resilience_mesh.cli.chaos_cmd import console

DEFAULT_REASON = "pulled with `mesh chaos stop`"


def stop_command(
    reason: Annotated[
        str, typer.Option("--reason", help="Why: every stopped or refused run says it.")
    ] = DEFAULT_REASON,
    release_: Annotated[
        bool, typer.Option("--release", help="Release the lever: runs may start again.")
    ] = False,
) -> None:
    """Stop every chaos experiment running on this machine and refuse new ones until released.

    Running experiments roll their faults back and stop within a second; `mesh chaos run`
    refuses (exit 2) while the lever is pulled. MESH_CHAOS_LEVER: the lever file's path.
    """
    if release_:
        if release():
            console.print(f"chaos lever released ({escape(str(lever_path()))}): runs may start")
        else:
            console.print(f"the chaos lever was not pulled ({escape(str(lever_path()))})")
        return
    path = pull(reason)
    console.print(
        f"chaos lever pulled ({escape(str(path))}): {escape(reason)}\n"
        f"running experiments roll back and stop (checked every {WATCH_EVERY_S:g} s); "
        "new ones are refused until `mesh chaos stop --release`",
        soft_wrap=True,
    )
