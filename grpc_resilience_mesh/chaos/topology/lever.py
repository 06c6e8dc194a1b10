"""The machine's chaos lever (AWS FIS's safety lever, as a file): while it is pulled, every running
experiment of this user on this machine rolls back and stops, and no new one starts.

A file rather than a signal or a socket: runs need not know of each other, a run started after
the pull sees it, and it outlives the command that pulled it (a reboot included) until released.
`MESH_CHAOS_LEVER` points it elsewhere (tests, or one lever shared by several checkouts).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from grpc_resilience_mesh.services import settings

LEVER = settings.Var(
    "MESH_CHAOS_LEVER",
    settings.text,
    "",
    "the chaos lever's file (`mesh chaos stop`); default ~/.local/state/grpc-resilience-mesh/"
    "chaos-lever",
)
LEVER_ENV = LEVER.name
WATCH_EVERY_S = 0.25
"""How often a running experiment looks at the lever."""
RELEASE_HINT = "release it with `mesh chaos stop --release`"


class LeverPulled(RuntimeError):
    """The lever is pulled: an experiment refused, or stopped; the message says how to go on."""

    def __init__(self, reason: str, path: Path | None = None) -> None:
        self.reason = reason
        self.path = path or lever_path()
        super().__init__(f"the chaos lever is pulled ({self.path}): {reason}; {RELEASE_HINT}")


def lever_path(environ: Mapping[str, str] | None = None) -> Path:
    """`MESH_CHAOS_LEVER`, else ~/.local/state/grpc-resilience-mesh/chaos-lever (the user's
    state, as XDG places it: it survives a reboot, as a pulled lever should)."""
    if chosen := LEVER.read(environ):
        return Path(chosen).expanduser()
    return Path.home() / ".local" / "state" / "grpc-resilience-mesh" / "chaos-lever"


def pull(reason: str) -> Path:
    """Pulls the lever (again: the newer reason wins); returns its path."""
    path = lever_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"reason": reason, "pulled_at": time.time(), "pid": os.getpid()}
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(record) + "\n")
    os.replace(partial, path)  # a reader sees the whole file or none
    return path


def release() -> bool:
    """Releases the lever; False if it was not pulled."""
    try:
        lever_path().unlink()
    except FileNotFoundError:
        return False
    return True


def pulled() -> str | None:
    """The reason the lever is pulled, or None."""
    try:
        text = lever_path().read_text()
    except FileNotFoundError:
        return None
    except OSError as err:  # unreadable: treat as pulled, the safe side
        return f"the lever cannot be read ({err})"
    with contextlib.suppress(ValueError, AttributeError):
        return str(json.loads(text).get("reason") or "no reason given")
    return text.strip() or "no reason given"


def refuse_if_pulled() -> None:
    """LeverPulled if the lever is pulled now."""
    if (reason := pulled()) is not None:
        raise LeverPulled(reason)


async def watch_lever(
    on_pull: Callable[[str], None], stop: asyncio.Event, every_s: float = WATCH_EVERY_S
) -> None:
    """Looks at the lever every `every_s` until `stop`; on a pull calls `on_pull(reason)` once
    and returns."""
    while not stop.is_set():
        if (reason := pulled()) is not None:
            on_pull(reason)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
