"""`mesh up`'s supervisor: which dead process comes back, when, and what it says about it."""

from __future__ import annotations

from dataclasses import dataclass, field

from grpc_resilience_mesh.launch.processes import LaunchError, ProcessStatus
from grpc_resilience_mesh.launch.supervisor import Backoff, Supervisor, SupervisorEvent
from tests.support.fake_clock import FakeClock

TICK_S = 0.125
"""wait_for_restart's step: exact in binary, so ticks add up to the delays without rounding."""


@dataclass
class FakeMesh:
    """The processes as the supervisor sees them; restart_service() starts a new PID at once."""

    clock: FakeClock
    procs: dict[str, ProcessStatus] = field(default_factory=dict)
    restarted: list[str] = field(default_factory=list)
    failing_starts: int = 0
    unspawnable: int = 0
    stopping: bool = False
    policy: str = "full"
    _next_pid: int = 1000

    def add(self, name: str) -> None:
        self._next_pid += 1
        self.procs[name] = ProcessStatus(name, self._next_pid, None, self.clock.now())

    def die(self, name: str, code: int = -9) -> None:
        p = self.procs[name]
        self.procs[name] = ProcessStatus(name, p.pid, code, p.started_at)

    def supervised(self) -> list[ProcessStatus]:
        return list(self.procs.values())

    def components(self) -> list[str]:
        return list(self.procs)

    def restart_service(self, name: str) -> int:
        self.restarted.append(name)
        if self.unspawnable:
            self.unspawnable -= 1
            raise FileNotFoundError(2, "No such file or directory", "redis-server")
        if self.failing_starts:
            self.failing_starts -= 1
            self.add(name)
            self.die(name, 1)
            raise LaunchError(f"{name} exited with code 1 during start-up:\nboom")
        self.add(name)
        return self.procs[name].pid

    def record_policy(self, policy: str) -> None:
        self.policy = policy


def setup() -> tuple[FakeClock, FakeMesh, Supervisor, list[SupervisorEvent]]:
    clock = FakeClock(100.0)
    mesh = FakeMesh(clock)
    for name in ("redis", "payment", "gateway"):
        mesh.add(name)
    events: list[SupervisorEvent] = []
    return clock, mesh, Supervisor(mesh, events.append, Backoff(), clock.now), events


def wait_for_restart(clock: FakeClock, mesh: FakeMesh, sup: Supervisor, limit_s: float) -> float:
    """Advance the fake clock in TICK_S steps until a restart happens; the delay it took."""
    before, started = len(mesh.restarted), clock.now()
    sup.poll()
    while len(mesh.restarted) == before:
        assert clock.now() - started <= limit_s, "no restart"
        clock.advance(TICK_S)
        sup.poll()
    return clock.now() - started


def test_a_killed_process_is_restarted_after_half_a_second_and_both_events_are_reported() -> None:
    clock, mesh, sup, events = setup()
    clock.advance(30)
    mesh.die("payment")
    sup.poll()
    assert mesh.restarted == []
    assert [(e.kind, e.name) for e in events] == [("exited", "payment")]
    assert "killed by SIGKILL after 30.0 s" in events[0].message
    assert "restarting it in 0.5 s" in events[0].message
    clock.advance(0.4)
    sup.poll()
    assert mesh.restarted == []
    clock.advance(0.1)
    sup.poll()
    assert mesh.restarted == ["payment"]
    assert events[-1].kind == "restarted"
    assert events[-1].pid == mesh.procs["payment"].pid
    sup.poll()
    assert mesh.restarted == ["payment"], "a live process is left alone"


def test_quick_failures_double_the_delay_to_10_s_and_a_long_run_starts_over() -> None:
    clock, mesh, sup, _ = setup()
    delays = []
    for _ in range(7):
        clock.advance(1)  # up for a second only
        mesh.die("payment")
        delays.append(wait_for_restart(clock, mesh, sup, limit_s=11))
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    clock.advance(10)  # up for 10 s: healthy again
    mesh.die("payment")
    assert wait_for_restart(clock, mesh, sup, limit_s=11) == 0.5


def test_a_failed_start_is_reported_and_retried_with_a_longer_delay() -> None:
    clock, mesh, sup, events = setup()
    clock.advance(30)
    mesh.failing_starts = 2
    mesh.die("redis", 0)
    assert wait_for_restart(clock, mesh, sup, limit_s=1) == 0.5
    assert events[-1].kind == "failed"
    assert "exited with code 1 during start-up" in events[-1].message
    assert wait_for_restart(clock, mesh, sup, limit_s=2) == 1.0
    assert wait_for_restart(clock, mesh, sup, limit_s=3) == 2.0
    assert events[-1].kind == "restarted"
    assert mesh.restarted == ["redis"] * 3
    assert mesh.procs["redis"].exit_code is None


def test_a_process_that_cannot_even_be_spawned_is_retried_with_backoff() -> None:
    clock, mesh, sup, events = setup()
    clock.advance(30)
    mesh.unspawnable = 1
    old_pid = mesh.procs["redis"].pid
    mesh.die("redis")
    assert wait_for_restart(clock, mesh, sup, limit_s=1) == 0.5
    assert events[-1].kind == "failed" and "redis-server" in events[-1].message
    assert mesh.procs["redis"].pid == old_pid, "nothing was started"
    assert wait_for_restart(clock, mesh, sup, limit_s=2) == 1.0
    assert events[-1].kind == "restarted"


def test_nothing_is_restarted_while_the_mesh_stops() -> None:
    clock, mesh, sup, events = setup()
    mesh.stopping = True
    mesh.die("payment")
    mesh.die("gateway", -15)
    clock.advance(60)
    sup.poll()
    assert mesh.restarted == []
    assert events == []


def test_a_restart_request_restarts_at_once_and_an_unknown_name_is_refused() -> None:
    _, mesh, sup, events = setup()
    old = mesh.procs["gateway"].pid
    reply = sup.handle({"op": "restart", "service": "gateway"})
    assert reply["ok"] is True
    assert reply["old_pid"] == old
    assert reply["pid"] == mesh.procs["gateway"].pid != old
    assert [e.kind for e in events] == ["requested", "restarted"]

    reply = sup.handle({"op": "restart", "service": "paymnet"})
    assert reply["ok"] is False and reply["unknown"] is True
    assert "unknown service 'paymnet'" in reply["error"]
    assert "payment" in reply["error"]
    assert mesh.restarted == ["gateway"]
    assert sup.handle({"op": "reboot"})["ok"] is False


def test_a_requested_restart_that_fails_says_why_and_is_retried_with_backoff() -> None:
    clock, mesh, sup, events = setup()
    mesh.failing_starts = 1
    reply = sup.handle({"op": "restart", "service": "payment"})
    assert reply["ok"] is False
    assert "boom" in reply["error"]
    assert not reply.get("unknown")
    assert wait_for_restart(clock, mesh, sup, limit_s=2) == 0.5
    assert events[-1].kind == "restarted"


def test_a_policy_request_is_what_later_restarts_use() -> None:
    _, mesh, sup, _ = setup()
    assert sup.handle({"op": "policy", "policy": "retry-only"}) == {"ok": True}
    assert mesh.policy == "retry-only"
