"""Size-bounded files: a file that outgrows its bound becomes `<name>.1`, `.1` becomes `.2`,
and so on up to `backups` (the oldest is dropped), so a file and its generations never hold
much more than `max_bytes x (backups + 1)`.

The span exporter owns its file and rotates by renaming (`rotate`). A log written by a child
process through its stdout cannot be renamed away (the child keeps writing to the renamed
file), so the launcher copies it to `.1` and truncates it in place (`copy_truncate`): the
child's descriptor is O_APPEND, so its next write lands at the new end. Readers take every
generation, oldest first (`generations`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def _generation(path: Path, n: int) -> Path:
    return path.with_name(f"{path.name}.{n}")


def generations(path: Path) -> list[Path]:
    """The rotated files of `path` that exist, oldest first, then `path` itself if it exists."""
    found = []
    prefix = path.name + "."
    if path.parent.is_dir():
        for entry in path.parent.iterdir():
            suffix = entry.name[len(prefix) :]
            if entry.name.startswith(prefix) and suffix.isascii() and suffix.isdigit():
                found.append((int(suffix), entry))
    ordered = [p for _, p in sorted(found, reverse=True)]
    return ordered + ([path] if path.exists() else [])


def _shift(path: Path, backups: int) -> None:
    """`.k` -> `.k+1` for every kept generation, dropping what falls past `backups`."""
    for n in range(backups, 0, -1):
        older = _generation(path, n)
        if older.exists():
            if n == backups:
                older.unlink()
            else:
                os.replace(older, _generation(path, n + 1))


def rotate(path: Path, backups: int) -> None:
    """Move `path` to `.1` (its elder generations one step on); with no backups, drop it."""
    _shift(path, backups)
    if backups:
        os.replace(path, _generation(path, 1))
    else:
        path.unlink(missing_ok=True)


def copy_truncate(path: Path, backups: int) -> None:
    """Copy `path` to `.1` (elder generations one step on) and empty it in place, for a file
    another process appends to. What is written between the copy and the truncation is lost."""
    _shift(path, backups)
    if backups:
        copy = _generation(path, 1)
        shutil.copyfile(path, copy)
        shutil.copymode(path, copy)  # an owner-only log stays owner-only in its copies
    os.truncate(path, 0)
