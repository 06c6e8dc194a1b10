"""mesh-xds's admin PUT against its own file watch: a PUT applies its config and writes it to
the file the plane polls, and a poll between the two read the file's older bytes and pushed them
over the PUT's (GET /config then served the config before it, and the clients were sent old,
new, old). `mesh fault --xds` reads the config right after a PUT, and failed on that (CI:
"the plane serves no profile to gateway")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.xds.plane import one_edge, running_plane

pytestmark = pytest.mark.slow
PUTS = 300


def test_a_put_is_what_the_plane_serves_when_it_answers_whatever_the_poll(tmp_path: Path) -> None:
    # A poll every millisecond: with the race, about one PUT in ten was undone (the file's
    # write after the apply takes some 100 us); 300 PUTs make a miss near certain.
    with running_plane(tmp_path, {"nodes": {}}, poll_s=0.001) as plane:
        undone = []
        for i in range(PUTS):
            config = one_edge(f"svc-{i}", ["127.0.0.1:1"])
            plane.put(config)
            served = plane.config()
            if served != config:
                undone.append((i, sorted(served["nodes"]["gateway"])))
    assert not undone, f"{len(undone)} of {PUTS} PUTs undone by a poll, first: {undone[:3]}"
