"""Injecting an experiment's faults on schedule, and removing every one of them on any exit.

Toxics and proxy outages go through the Toxiproxy API (ours or Shopify's), application faults
through each service's loopback FaultAdmin, xDS (A33) faults through the control plane's admin HTTP
(grpc_resilience_mesh/chaos/run/xds_faults.py). `reset_all()` is the kill switch: it is safe to call
at any time, any number of times.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypedDict

import grpc

from grpc_resilience_mesh.chaos.experiment.model import (
    AppFault,
    Fault,
    KillFault,
    ProxyDownFault,
    SlowdownFault,
    ToxicFault,
    XdsFault,
)
from grpc_resilience_mesh.chaos.results import FaultEvent
from grpc_resilience_mesh.chaos.run.xds_faults import reset_xds_faults, set_xds_fault
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError
from grpc_resilience_mesh.services.runtime.admin_auth import admin_metadata
from grpc_resilience_mesh.services.topology import EDGES, edge_proxies, replica_of
from grpc_resilience_mesh.services.v1 import admin_pb2, admin_pb2_grpc

log = logging.getLogger("chaos.faults")


class Processes(Protocol):
    """What a kill fault needs of a mesh this run started
    (grpc_resilience_mesh.launch.mesh.Mesh)."""

    def kill(self, name: str) -> int: ...

    def restart_service(self, name: str) -> int: ...


def proxies_of(name: str) -> list[str]:
    """The proxies a fault on `name` touches: every replica's for an edge, else that proxy."""
    for e in EDGES:
        if e.name == name:
            return [p.name for p in edge_proxies(e)]
    return [name]


class Recorded(TypedDict):
    """A schedule's record: its faults' on/off times, when restarted processes served."""

    timeline: list[FaultEvent]
    served_at: dict[str, float]
    timeline_t0_s: float


@dataclass
class Injector:
    """Applies faults to one running mesh: its Toxiproxy API and its services' admin ports."""

    toxiproxy: ToxiproxyClient | None
    admin: Mapping[str, str]
    processes: Processes | None = None
    timeline: list[FaultEvent] = field(default_factory=list)
    killed: set[str] = field(default_factory=set)
    """Processes a kill fault took down and has not started again (reset_all does)."""
    served_at: dict[str, float] = field(default_factory=dict)
    """Per process a kill fault restarted: when it served again, seconds on the timeline's
    clock (restart_service returns once it reports SERVING)."""
    observer: Callable[[Fault, bool], Awaitable[None]] | None = None
    """Awaited after each fault goes on or off (the runner reads counters there)."""
    admin_token: str | None = None
    """Sent with every admin call, the xDS plane's included (the Toxiproxy client carries its
    own)."""
    restarting: set[str] = field(default_factory=set)
    """The processes this schedule's kill faults start again (those with a stop_s)."""
    xds_admin: Callable[[], str | None] = lambda: None
    """The mesh's xDS control plane's admin URL now (None: not under xDS); asked each time,
    since a variant may restart the mesh into or out of xDS."""
    _t0: float = 0.0

    def recorded(self) -> Recorded:
        """What the last schedule did, for its PhaseResult."""
        return {
            "timeline": list(self.timeline),
            "served_at": dict(self.served_at),
            "timeline_t0_s": self._t0,
        }

    def return_left_s(self, watch_s: float, now: float) -> float:
        """How much longer a load should run (from `now`, monotonic) so that each process this
        schedule restarts is seen SERVING for `watch_s`: `watch_s` while one is down or starting."""
        now -= self._t0
        left = 0.0
        for name in self.restarting:
            served = self.served_at.get(name)
            if served is None:
                return watch_s
            left = max(left, served + watch_s - now)
        return left

    def _mark(self, what: str, on: bool) -> None:
        self.timeline.append(FaultEvent(round(time.monotonic() - self._t0, 3), what, on))

    def _need_toxiproxy(self) -> ToxiproxyClient:
        if self.toxiproxy is None:
            raise RuntimeError("this fault needs Toxiproxy, and the mesh runs --direct")
        return self.toxiproxy

    async def _kill(self, fault: KillFault, on: bool) -> None:
        if self.processes is None:
            raise RuntimeError("a kill fault needs a mesh this run started (not --target)")
        if on:
            self.killed.add(fault.service)
            await asyncio.to_thread(self.processes.kill, fault.service)
        elif fault.service in self.killed:
            await asyncio.to_thread(self.processes.restart_service, fault.service)
            self.killed.discard(fault.service)
            self.served_at[fault.service] = round(time.monotonic() - self._t0, 3)

    async def _app(self, fault: AppFault | SlowdownFault, on: bool) -> None:
        # Every replica of the service gets the fault.
        addrs = [a for s, a in self.admin.items() if replica_of(s) == fault.service]
        if not addrs:
            raise RuntimeError(f"no admin address for {fault.service}: cannot inject app faults")
        for addr in addrs:
            await self._app_one(addr, fault, on)

    async def _app_one(self, addr: str, fault: AppFault | SlowdownFault, on: bool) -> None:
        async with grpc.aio.insecure_channel(addr) as channel:
            stub = admin_pb2_grpc.FaultAdminStub(channel)
            if on:
                await stub.SetFault(
                    admin_pb2.SetFaultRequest(fault=_admin_fault(fault)),
                    timeout=2,
                    metadata=admin_metadata(self.admin_token),
                )
            else:
                await stub.ClearFaults(
                    admin_pb2.ClearFaultsRequest(method=fault.full_method),
                    timeout=2,
                    metadata=admin_metadata(self.admin_token),
                )

    async def set(self, index: int, fault: Fault, on: bool) -> None:
        label = describe(fault)
        if isinstance(fault, ToxicFault):
            client = self._need_toxiproxy()
            name = f"exp{index}_{fault.toxic}_{fault.stream}"
            for proxy in await _present(client, proxies_of(fault.edge)):
                if on:
                    await asyncio.to_thread(
                        client.add_toxic,
                        proxy,
                        fault.toxic,
                        stream=fault.stream,
                        toxicity=fault.toxicity,
                        attributes=dict(fault.attributes),
                        name=name,
                    )
                else:
                    await asyncio.to_thread(_ignore_missing, client.remove_toxic, proxy, name)
        elif isinstance(fault, ProxyDownFault):
            client = self._need_toxiproxy()
            for proxy in await _present(client, proxies_of(fault.edge)):
                await asyncio.to_thread(client.update_proxy, proxy, enabled=not on)
        elif isinstance(fault, KillFault):
            await self._kill(fault, on)
        elif isinstance(fault, XdsFault):
            await set_xds_fault(self.xds_admin(), fault, on, self.admin_token)
        else:
            await self._app(fault, on)
        self._mark(label, on)
        if self.observer is not None:
            await self.observer(fault, on)

    async def run_schedule(
        self, faults: list[Fault], stop: asyncio.Event, ready: asyncio.Event
    ) -> None:
        """Turn each fault on at start_s and off at stop_s (or when `stop` is set).

        Faults that start at 0 are on before `ready` is set, so the load can start after them
        and no early request slips through unfaulted.
        """
        self._t0 = time.monotonic()
        self.served_at = {}
        self.restarting = {
            f.service for f in faults if isinstance(f, KillFault) and f.stop_s is not None
        }
        at_start = [asyncio.Event() for _ in faults]
        tasks = [
            asyncio.create_task(self._one(i, f, stop, at_start[i])) for i, f in enumerate(faults)
        ]
        try:
            for i, fault in enumerate(faults):
                if fault.start_s == 0:
                    await at_start[i].wait()
            self._t0 = time.monotonic()
            ready.set()
            await asyncio.gather(*tasks)
        finally:
            ready.set()
            for t in tasks:
                t.cancel()

    async def _one(
        self, index: int, fault: Fault, stop: asyncio.Event, started: asyncio.Event
    ) -> None:
        try:
            await self._run_one(index, fault, stop, started)
        finally:
            started.set()

    async def _run_one(
        self, index: int, fault: Fault, stop: asyncio.Event, started: asyncio.Event
    ) -> None:
        if fault.start_s > 0 and await _wait_or_stop(stop, fault.start_s):
            return
        end = None if fault.stop_s is None else self._t0 + fault.stop_s
        if isinstance(fault, ProxyDownFault) and fault.down_s and fault.up_s:
            while not _past(end):
                await self.set(index, fault, True)
                started.set()
                stopped = await _wait_or_stop(stop, _until(end, fault.down_s))
                await self.set(index, fault, False)
                if stopped or _past(end) or await _wait_or_stop(stop, _until(end, fault.up_s)):
                    return
            return
        await self.set(index, fault, True)
        started.set()
        await _wait_or_stop(stop, None if end is None else max(0.0, end - time.monotonic()))
        await self.set(index, fault, False)

    async def reset_all(self) -> None:
        """Remove every toxic, enable every proxy, clear every app fault and every xDS fault
        set at run time, start again what a kill fault left down. Never raises."""
        try:
            await reset_xds_faults(self.xds_admin(), self.admin_token)
        except Exception as err:  # the kill switch goes on with the rest
            log.error("removing the xDS faults failed: %s", err)
        for name in sorted(self.killed):
            try:
                assert self.processes is not None
                await asyncio.to_thread(self.processes.restart_service, name)
                self.killed.discard(name)
            except Exception as err:  # the kill switch goes on with the rest
                log.error("restarting %s failed: %s", name, err)
        if self.toxiproxy is not None:
            try:
                await asyncio.to_thread(self.toxiproxy.reset)
            except ToxiproxyError as err:
                log.error("toxiproxy reset failed: %s", err)
        for service, addr in self.admin.items():
            try:
                async with grpc.aio.insecure_channel(addr) as channel:
                    await admin_pb2_grpc.FaultAdminStub(channel).ClearFaults(
                        admin_pb2.ClearFaultsRequest(),
                        timeout=2,
                        metadata=admin_metadata(self.admin_token),
                    )
            except grpc.aio.AioRpcError as err:
                log.error("clearing faults on %s failed: %s", service, err.code().name)


def _admin_fault(fault: AppFault | SlowdownFault) -> admin_pb2.Fault:
    """What the service's FaultAdmin is sent for `fault`."""
    if isinstance(fault, SlowdownFault):
        return admin_pb2.Fault(method="*", error_rate=0.0, service_time_factor=fault.factor)
    return admin_pb2.Fault(
        method=fault.full_method,
        error_rate=fault.error_rate,
        code=fault.code,
        delay_s=fault.delay_s,
        pushback_ms=fault.pushback_ms,
        after_messages=fault.after_messages,
        first_attempt_only=fault.first_attempt_only,
    )


def describe(fault: Fault) -> str:
    if isinstance(fault, ToxicFault):
        attrs = ",".join(f"{k}={v}" for k, v in fault.attributes.items())
        return f"{fault.edge}: {fault.toxic}({attrs}) {fault.stream}"
    if isinstance(fault, ProxyDownFault):
        flap = f" flapping {fault.down_s}s/{fault.up_s}s" if fault.down_s else ""
        return f"{fault.edge}: down{flap}"
    if isinstance(fault, KillFault):
        return f"{fault.service}: kill -9"
    if isinstance(fault, SlowdownFault):
        return f"{fault.service}: service time x{fault.factor:g}"
    if isinstance(fault, XdsFault):
        abort = f" abort {fault.abort_percent:g}% {fault.abort_code}" if fault.abort_percent else ""
        delay = f" delay {fault.delay_percent:g}% {fault.delay_s:g}s" if fault.delay_percent else ""
        return f"{fault.edge} {fault.method}: xds{abort}{delay}"
    delay = f" +{fault.delay_s}s" if fault.delay_s else ""
    return f"{fault.service} {fault.method}: {fault.code} x{fault.error_rate:g}{delay}"


async def _present(client: ToxiproxyClient, names: list[str]) -> list[str]:
    """An edge's proxies as this Toxiproxy has them: every replica's (`<edge>-k`), or only the
    edge's own where that one proxy forwards to the dependency as a whole (deploy/k8s's chaos
    overlay: a headless Service over every replica, no proxy per pod)."""
    if len(names) == 1:
        return names
    have = await asyncio.to_thread(client.proxies)
    if names[0] in have and not any(n in have for n in names[1:]):
        return names[:1]
    return names


def _ignore_missing(fn, *args):  # type: ignore[no-untyped-def]
    try:
        fn(*args)
    except ToxiproxyError as err:
        if err.status != 404:
            raise


def _until(end: float | None, span_s: float) -> float:
    if end is None:
        return span_s
    return max(0.0, min(span_s, end - time.monotonic()))


def _past(end: float | None) -> bool:
    return end is not None and time.monotonic() >= end


async def _wait_or_stop(stop: asyncio.Event, seconds: float | None) -> bool:
    """Sleep `seconds` (None: forever) unless `stop` is set first; True if stopped."""
    if stop.is_set():
        return True
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        return False
    return True
