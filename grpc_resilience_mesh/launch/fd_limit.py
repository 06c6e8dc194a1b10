"""`mesh up`'s descriptor limit: the soft RLIMIT_NOFILE raised to the hard one at start.

The common soft limit (1,024) is what an attacker's idle connections exhaust first; the hard
limit is what the administrator allows. The processes `mesh up` starts inherit the raised limit.
"""

from __future__ import annotations

import resource

NO_HARD_LIMIT_TARGET = 1 << 20  # Linux's default nr_open: what "unlimited" can be raised to


def raise_open_files_limit() -> tuple[int, int]:
    """Raise the soft limit on open files to the hard limit; (soft before, soft after).
    Where the system refuses, the limit stays as it was."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = NO_HARD_LIMIT_TARGET if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft, soft
        return soft, target
    return soft, soft
