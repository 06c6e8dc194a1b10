"""Free ports are picked below the ephemeral range, skip ports in use, and are never handed to
two processes at once (CI saw `address already in use` when they came from bind(0))."""

from __future__ import annotations

import multiprocessing
import socket
from multiprocessing.synchronize import Event as EventType

from grpc_resilience_mesh.launch import ports
from grpc_resilience_mesh.launch.ports import free_ports


def test_ports_come_from_below_the_ephemeral_range() -> None:
    low, _ = ports._ephemeral_range()
    picked = free_ports(40)
    assert len(set(picked)) == 40
    assert all(10_000 <= p < low for p in picked), picked


def test_a_port_with_a_listener_is_skipped(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        monkeypatch.setattr(ports, "_LOWEST", busy)
        monkeypatch.setattr(ports, "_ephemeral_range", lambda: (busy + 1100, 65535))
        monkeypatch.setattr(ports, "_start", lambda n: 0)  # start at the busy port
        assert busy not in free_ports(3)


def _pick(queue: multiprocessing.Queue[list[int]], done: EventType, lowest: int) -> None:
    ports._LOWEST = lowest
    ports._ephemeral_range = lambda: (lowest + 1100, 65535)
    ports._start = lambda n: 0
    queue.put(free_ports(20))
    done.wait(60)  # the locks stay held, as in a launcher, until the parent has both answers


def test_two_processes_picking_at_once_get_different_ports() -> None:
    ctx = multiprocessing.get_context("spawn")
    lowest = 12_345
    answers: multiprocessing.Queue[list[int]] = ctx.Queue()
    done = ctx.Event()
    procs = [ctx.Process(target=_pick, args=(answers, done, lowest)) for _ in range(2)]
    for p in procs:
        p.start()
    first, second = answers.get(timeout=60), answers.get(timeout=60)
    done.set()
    for p in procs:
        p.join(timeout=60)
    assert not set(first) & set(second), (first, second)
