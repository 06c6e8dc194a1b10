"""`mesh certs`: a development CA and one server certificate per service, for MESH_TLS=1.

The certificates are made by grpc_resilience_mesh/launch/certs.py (also used by `mesh up` when
MESH_TLS=1 and the directory is empty). For a laptop or a test cluster only: the CA key is written
next to the certificates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from grpc_resilience_mesh.launch.certs import CA_KEY, write_certs

console = Console()


def certs(
    directory: Annotated[Path, typer.Option("--dir", help="Where to write them.")] = Path(
        "var/certs"
    ),
) -> None:
    """Write a dev CA and a TLS certificate per service (SANs: name, localhost, 127.0.0.1).

    Then `MESH_TLS=1 MESH_TLS_DIR=DIR mesh up` serves every internal hop over TLS.
    """
    written = write_certs(directory)
    for path in written:
        console.print(f"wrote {path}")
    console.print(
        f"\nturn TLS on:  [bold]export MESH_TLS=1 MESH_TLS_DIR={directory}[/bold]\n"
        f"(a development CA: its key {directory / CA_KEY} can mint trusted certificates)"
    )
