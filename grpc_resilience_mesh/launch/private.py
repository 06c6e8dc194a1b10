"""Owner-only state: what a mesh writes under its state dir is 0600 (files) and 0700 (folders).

The mailbox holds names, emails and amounts, the logs and traces the calls that carried them,
mesh.json and the ledger were already 0600. The commands that start a mesh (`mesh up`,
`mesh chaos run`, `mesh demo`) set the process umask to 077 before they create anything, so
every file the launcher and its children (services, Redis, the SMTP sink, Toxiproxy) create is
the owner's alone, whoever writes it. Reports are meant to be shared (aggregates, verdicts,
trace ids; no customer data), so they are written under the umask the user had
(`shared_files`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PRIVATE_UMASK = 0o077
_user_umask: list[int] = []
"""The umask the process had before private_umask() (empty: never called)."""


def private_umask() -> None:
    """From now on this process and every child it starts create owner-only files."""
    old = os.umask(PRIVATE_UMASK)
    if not _user_umask:
        _user_umask.append(old)


def user_umask() -> int:
    """The umask the user had (before private_umask()), else the process's own: what a
    process writing reports for this one starts with."""
    if _user_umask:
        return _user_umask[0]
    current = os.umask(PRIVATE_UMASK)
    os.umask(current)
    return current


@contextmanager
def shared_files() -> Iterator[None]:
    """Files created inside get the user's own umask (reports: meant to be shared)."""
    if not _user_umask:
        yield
        return
    os.umask(_user_umask[0])
    try:
        yield
    finally:
        os.umask(PRIVATE_UMASK)


def private_dir(path: Path) -> None:
    """`path` made (or kept) a folder only its owner can enter, with everything already in it
    made owner-only too (a state dir an earlier version wrote with 0644 files)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    for entry in [path, *path.rglob("*")]:
        try:
            mode = entry.lstat().st_mode
            if not stat.S_ISLNK(mode) and stat.S_IMODE(mode) & 0o077:
                entry.chmod(stat.S_IMODE(mode) & 0o700)
        except FileNotFoundError:  # a file a running process just rotated or removed
            continue
