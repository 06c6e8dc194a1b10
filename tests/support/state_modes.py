"""What a state dir's modes let others see, and the umask a test process runs under."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def loose_modes(root: Path) -> list[str]:
    """Every entry under `root` (and root) whose mode lets the group or others in."""
    found = []
    for path in [root, *sorted(root.rglob("*"))]:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        want = 0o700 if stat.S_ISDIR(mode) else 0o600
        if stat.S_IMODE(mode) & ~want:
            found.append(f"{oct(stat.S_IMODE(mode))} {path.relative_to(root.parent)}")
    return found


def current_umask() -> int:
    """The process's umask (reading it means setting it: set it back at once)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask
