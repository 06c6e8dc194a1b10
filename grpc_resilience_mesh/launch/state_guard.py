"""A state dir the mesh may write in: the user's own, writable by no one else, and no link in it.

On a shared host another user can make the folder before the mesh starts, or plant a symbolic
link in one they can write: the mesh would then put the API key, the admin token and the
customers' data where that user reads them, or truncate the file a planted link points to
(mesh.lock is opened for writing at start). So the launcher refuses a state dir another user
owns or that the group or others can write, refuses one with a symbolic link anywhere in it,
and opens its own files there with O_NOFOLLOW (open_private): a link is refused, never
followed. mesh.json and console-token are made by mkstemp (O_EXCL, O_NOFOLLOW) and renamed
into place, which replaces a link rather than writing through it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grpc_resilience_mesh.launch.processes import LaunchError


class StateDirRefused(LaunchError):
    """The state dir is not safe to write in; the message names the folder and the fix."""


class StateDirInUse(LaunchError):
    """Another mesh holds the state dir; nothing was started and no file was touched."""

    def __init__(self, state_dir: Path, holder: Mapping[str, Any]) -> None:
        self.pid = holder.get("pid")
        self.gateway = holder.get("gateway")
        super().__init__(
            f"a mesh is already running on {state_dir} (pid {self.pid or 'unknown'}, "
            f"gateway {self.gateway or 'unknown'}); stop it first, or use another state dir"
        )


def check_state_dir(path: Path) -> None:
    """Refuse `path` (an existing folder) unless this user owns it and no one else may write
    in it; then refuse it if it holds a symbolic link."""
    info = path.stat()
    uid = os.geteuid()
    if info.st_uid != uid:
        raise StateDirRefused(
            f"the state dir {path} belongs to uid {info.st_uid}, not to you (uid {uid}): "
            "another user could read the mesh's secrets there or plant files in it; use a "
            f"folder of your own (--state-dir, MESH_STATE_DIR) or `chown {uid} {path}`"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise StateDirRefused(
            f"the state dir {path} is writable by others (mode {mode:04o}): another user could "
            f"plant a link in it that the mesh would write through; `chmod go-w {path}`, or "
            "use another --state-dir"
        )
    links = links_in(path)
    if links:
        raise StateDirRefused(
            f"{links[0]} is a symbolic link in the state dir {path}"
            + (f" (and {len(links) - 1} more)" if len(links) > 1 else "")
            + f": the mesh never writes through a link there; remove it (`rm {links[0]}`), "
            "or use another --state-dir"
        )


def links_in(path: Path) -> list[Path]:
    """The symbolic links under `path` (not followed: a linked folder is one entry). Read from
    the directory entries' types, without a stat per file (the mailbox keeps one per receipt)."""
    found, folders = [], [str(path)]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_symlink():
                    found.append(Path(entry.path))
                elif entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
    return sorted(found)


def open_private(path: Path, flags: int, mode: int = 0o600) -> int:
    """os.open of a file in the state dir, owner-only when created (unless `mode` says
    otherwise), never through a link: a link at `path` is StateDirRefused (the file it points
    to is not touched)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise StateDirRefused(
                f"{path} is a symbolic link: the mesh never writes through a link in its state "
                f"dir; remove it (`rm {path}`)"
            ) from None
        raise


def write_private(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace the content of `path` (open_private: created `mode`, never through a link)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    with os.fdopen(open_private(path, flags, mode), "wb") as out:
        out.write(data)
