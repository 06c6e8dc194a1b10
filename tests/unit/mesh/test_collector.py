"""A service process freezes its start-up objects, after collecting start-up garbage."""

from __future__ import annotations

import gc
import weakref

from grpc_resilience_mesh.services.runtime.collector import freeze_startup_objects


class _Node:
    me: _Node


def test_start_up_garbage_is_collected_and_what_lives_leaves_the_generations() -> None:
    garbage = _Node()
    garbage.me = garbage  # a cycle: only the collector frees it
    dead = weakref.ref(garbage)
    del garbage
    alive = _Node()
    alive.me = alive
    try:
        frozen = freeze_startup_objects()
        assert dead() is None  # collected, not pinned for the life of the process
        # what was frozen can still be freed (by this or another thread): never more than then
        assert 0 < gc.get_freeze_count() <= frozen
        assert not any(o is alive for o in gc.get_objects())  # no collection walks it now
    finally:
        gc.unfreeze()
    assert any(o is alive for o in gc.get_objects())
