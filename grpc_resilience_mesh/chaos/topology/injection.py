"""The faults of one run: applied in order, and rolled back at most once however many paths
ask (the guard's breach, the lever, the end of the load, an error), each time it is asked
answering when the rollback finished."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from grpc_resilience_mesh.chaos.topology.app_faults import AppFaultError, clear_faults, set_faults
from grpc_resilience_mesh.chaos.topology.experiment_model import FaultSpec
from grpc_resilience_mesh.chaos.topology.proxies import ProxySet


class Injection:
    """Toxics through `proxies`, app faults through each service's fault admin (`admin`)."""

    def __init__(self, faults: list[FaultSpec], proxies: ProxySet, admin: dict[str, str]) -> None:
        self.faults = faults
        self.proxies = proxies
        self.admin = admin
        self.app_services: list[str] = []
        self.rolled_back_at: float | None = None
        self.failures: list[str] = []
        self._lock = asyncio.Lock()

    async def apply(self) -> None:
        """Every fault, in the file's order; the app faults of one service in one Set."""
        rules: dict[str, list[dict[str, Any]]] = {}
        for i, fault in enumerate(self.faults):
            if fault.edge is not None:
                await asyncio.to_thread(self.proxies.add, fault, i)
            elif fault.service is not None and fault.app is not None:
                rules.setdefault(fault.service, []).append(fault.app.model_dump())
        for service, service_rules in rules.items():
            self.app_services.append(service)
            await set_faults(self.admin[service], service_rules)

    async def rollback(self) -> float:
        """Remove every fault applied (once); time.monotonic() when they were all gone."""
        async with self._lock:
            if self.rolled_back_at is None:
                self.failures = await asyncio.to_thread(self.proxies.remove_all)
                self.failures += await self._clear_app_faults()
                self.rolled_back_at = time.monotonic()
            return self.rolled_back_at

    async def _clear_app_faults(self) -> list[str]:
        failed = []
        for service in self.app_services:
            try:
                await clear_faults(self.admin[service])
            except AppFaultError as err:
                failed.append(f"{service}: {err}")
        return failed
