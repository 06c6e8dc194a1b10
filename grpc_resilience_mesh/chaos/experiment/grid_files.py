"""Grid files: a grid (grpc_resilience_mesh/chaos/experiment/grid.py) read from chaos/grids/ or
a path, and written out as one sweep experiment file per cell for the runner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from grpc_resilience_mesh.chaos.experiment.grid import (
    Cell,
    Grid,
    LeftOut,
    cell_experiment,
    plan,
    with_claim,
)
from grpc_resilience_mesh.services import safe_yaml

GRIDS_DIR = Path(__file__).parent.parent / "grids"


def load_grid(name_or_path: str) -> tuple[Grid, dict[str, Any]]:
    """The grid and its base experiment, from a path or a name in chaos/grids/."""
    path = Path(name_or_path)
    if not path.is_file():
        path = GRIDS_DIR / f"{name_or_path}.yaml"
    data = safe_yaml.load_file(str(path))
    if not isinstance(data, dict) or not isinstance(data.get("experiment"), dict):
        raise ValueError(f"{path}: a grid file has `grid:` and `experiment:`")
    try:
        grid = Grid.model_validate(data.get("grid"))
    except ValidationError as err:
        raise ValueError(f"{path}: grid: {err}") from None
    return grid, data["experiment"]


def write_cells(
    grid: Grid, base: dict[str, Any], quick: bool, folder: Path
) -> tuple[list[tuple[Cell, list[float], Path]], list[LeftOut]]:
    """One experiment file per cell that runs, and the points left out."""
    runs, left = plan(grid, quick)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for cell, points in runs:
        exp = with_claim(cell_experiment(base, cell, points), grid.claim, points, cell)
        path = folder / f"{cell.name}.yaml"
        path.write_text(yaml.safe_dump(exp, sort_keys=False))
        written.append((cell, points, path))
    return written, left
