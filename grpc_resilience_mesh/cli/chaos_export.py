"""`mesh chaos export NAME --format chaostoolkit`: a catalogue experiment as Chaos Toolkit
experiments, one JSON file per variant (grpc_resilience_mesh/chaos/export/chaostoolkit.py says what
maps to what)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.markup import escape

from grpc_resilience_mesh.chaos.experiment.kind import is_topology_experiment
from grpc_resilience_mesh.chaos.experiment.loading import load_experiment
from grpc_resilience_mesh.chaos.experiment.model import ExperimentError
from grpc_resilience_mesh.chaos.export.chaostoolkit import NotExportable, to_chaostoolkit
from grpc_resilience_mesh.chaos.export.topology import to_chaostoolkit_topology
from grpc_resilience_mesh.chaos.topology.model import load_topology_experiment
from grpc_resilience_mesh.services.policy.loading import PolicyError

console = Console(stderr=True)


def export(
    name: Annotated[str, typer.Argument(help="A name from `mesh chaos list`, or a YAML path.")],
    format_: Annotated[
        Literal["chaostoolkit"], typer.Option("--format", help="The experiment format written.")
    ] = "chaostoolkit",
    out: Annotated[Path, typer.Option(help="Folder for the files (NAME.VARIANT.json).")] = Path(
        "chaostoolkit"
    ),
    variant: Annotated[
        list[str] | None, typer.Option(help="Only these variants (default: every one).")
    ] = None,
) -> None:
    """Write the experiment as Chaos Toolkit experiments, one per variant; run one with
    `chaos run FILE` (MESH_STATE_FILE: the mesh.json of `mesh up`). A variant Chaos Toolkit
    cannot express is skipped with the reason; exit 1 when none could be written, 2 on bad
    input.

    A topology experiment (a file with `topology:`) is written as one file, NAME.json, run
    against its topology held up by `mesh topology up` (MESH_TOPOLOGY_STATE: its state file).
    """
    if Path(name).is_file() and is_topology_experiment(Path(name)):
        _export_topology(Path(name), out, variant)
        return
    try:
        path, exp = load_experiment(name)
    except ExperimentError as err:
        console.print(f"[red]error:[/red] {escape(str(err))}", soft_wrap=True)
        raise typer.Exit(2) from None
    chosen = [v for v in exp.variants if not variant or v.name in variant]
    unknown = sorted(set(variant or []) - {v.name for v in exp.variants})
    if unknown:
        known = ", ".join(v.name for v in exp.variants)
        console.print(f"[red]error:[/red] no variant {', '.join(unknown)} in {path.stem} ({known})")
        raise typer.Exit(2)
    written = 0
    for v in chosen:
        try:
            doc = to_chaostoolkit(path, path.stem, exp, v)
        except (NotExportable, PolicyError) as err:
            console.print(f"skipped {path.stem}/{v.name}: {escape(str(err))}", soft_wrap=True)
            continue
        out.mkdir(parents=True, exist_ok=True)
        target = out / f"{path.stem}.{v.name}.json"
        target.write_text(json.dumps(doc, indent=2) + "\n")
        console.print(f"wrote {escape(str(target))}", soft_wrap=True)
        written += 1
    if not written:
        raise typer.Exit(1)


def _export_topology(path: Path, out: Path, variant: list[str] | None) -> None:
    """One topology experiment as OUT/NAME.json; exit 2 on bad input (or a variant asked)."""
    try:
        if variant:
            raise ExperimentError(f"{path}: a topology experiment has no variants")
        doc = to_chaostoolkit_topology(load_topology_experiment(path))
    except ExperimentError as err:
        console.print(f"[red]error:[/red] {escape(str(err))}", soft_wrap=True)
        raise typer.Exit(2) from None
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{path.stem}.json"
    target.write_text(json.dumps(doc, indent=2) + "\n")
    console.print(f"wrote {escape(str(target))}", soft_wrap=True)
    console.print(f"first, in another terminal: {escape(doc['extensions'][0]['needs'])}")
