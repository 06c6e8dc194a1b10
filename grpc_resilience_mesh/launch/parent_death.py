"""Children that end when the process that started them dies, even by SIGKILL.

A child in a session of its own (`start_new_session`) is out of reach of a signal to its
parent's group, and a parent killed with SIGKILL runs no cleanup of its own, so such a child
would run on. Linux's PR_SET_PDEATHSIG has the kernel signal the child when its parent dies;
set in the child between fork and exec, it holds across the exec. Elsewhere there is no such
switch, and the parent's stop by PID is all there is.

The kernel ties the signal to the *thread* that forked: a child started from a worker thread is
signalled when that thread ends. Start such children from a thread that lives as long as they
should: the main thread, or an asyncio loop's default executor (its threads live until
`asyncio.run` returns).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal this process gets when its parent dies."""


def _prctl() -> Callable[[int, int, int, int, int], int] | None:
    """libc's prctl, loaded once here (not in a freshly forked child), or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
    prctl.restype = ctypes.c_int
    return prctl


_PRCTL = _prctl()


def dies_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A `preexec_fn` for subprocess.Popen that has the child sent `sig` when this process
    dies; None where the platform has no such switch (Popen takes None as no preexec_fn)."""
    prctl = _PRCTL
    if prctl is None:
        return None
    parent = os.getpid()

    def arm() -> None:
        # For a valid signal prctl cannot fail. A parent that died before it took effect is
        # seen as a new parent (init or a subreaper): the child then ends at once.
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return arm
