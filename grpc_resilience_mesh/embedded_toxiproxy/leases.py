"""Fault leases, our extension (real Toxiproxy has none): a dead-man's switch over toxics.

A controller that adds toxics holds a lease on their proxies and renews it (`PUT /leases/{id}`).
If it dies (kill -9, a lost machine), no one would ever remove its toxics; here, once a lease is
not renewed within its `ttl_s`, the server removes every toxic of its proxies and enables them,
as `POST /reset` does for those proxies alone. A clean `DELETE /leases/{id}` drops the lease and
leaves the proxies as they are (the controller rolls back its own faults).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grpc_resilience_mesh.embedded_toxiproxy.decoding import check_name_length, expect_object
from grpc_resilience_mesh.embedded_toxiproxy.errors import BAD_REQUEST_BODY, ApiError
from grpc_resilience_mesh.embedded_toxiproxy.json_reader import Number
from grpc_resilience_mesh.embedded_toxiproxy.proxy import ProxyAlreadyStartedError
from grpc_resilience_mesh.embedded_toxiproxy.proxy_collection import ProxyCollection

log = logging.getLogger(__name__)

LEASE_NOT_FOUND = ApiError("lease not found", 404)
EXPIRY_CHECK_S = 0.25
"""How often expiry is checked: a lease is acted on at most this long after it lapses."""
MAX_TTL_S = 3600.0
"""A longer lease is refused: a dead-man's switch that waits hours protects nothing."""


@dataclass
class Lease:
    """One controller's hold on some proxies' toxics, until `expires_at` (monotonic)."""

    lease_id: str
    ttl_s: float
    proxies: tuple[str, ...]
    expires_at: float

    def to_json(self, now: float) -> dict[str, Any]:
        left = max(0.0, self.expires_at - now)
        return {
            "id": self.lease_id,
            "ttl_s": self.ttl_s,
            "proxies": list(self.proxies),
            "expires_in_s": round(left, 3),
        }


def _parse(body: Any) -> tuple[float, tuple[str, ...]]:
    obj = expect_object(body, "lease")
    ttl = obj.get("ttl_s")
    if not isinstance(ttl, Number):
        raise BAD_REQUEST_BODY.joined("ttl_s: expected a number of seconds")
    ttl_s = float(ttl.literal)
    if not (math.isfinite(ttl_s) and 0 < ttl_s <= MAX_TTL_S):
        raise BAD_REQUEST_BODY.joined(f"ttl_s: expected 0 < ttl_s <= {MAX_TTL_S:g}")
    proxies = obj.get("proxies")
    if not isinstance(proxies, list) or not all(isinstance(p, str) for p in proxies):
        raise BAD_REQUEST_BODY.joined("proxies: expected a list of proxy names")
    for name in proxies:
        check_name_length(name, "proxy name")
    return ttl_s, tuple(proxies)


class LeaseTable:
    """The server's leases; `run_expiry` enforces them while the server runs."""

    def __init__(self, proxies: ProxyCollection, clock: Callable[[], float] = time.monotonic):
        self._proxies = proxies
        self._clock = clock
        self._leases: dict[str, Lease] = {}

    def all_json(self) -> dict[str, dict[str, Any]]:
        now = self._clock()
        return {lease_id: lease.to_json(now) for lease_id, lease in self._leases.items()}

    def renew_json(self, lease_id: str, body: Any) -> tuple[dict[str, Any], bool]:
        """PUT: creates or renews; (the lease's JSON, whether it was created)."""
        check_name_length(lease_id, "lease id")
        ttl_s, proxies = _parse(body)
        now = self._clock()
        created = lease_id not in self._leases
        lease = Lease(lease_id, ttl_s, proxies, now + ttl_s)
        self._leases[lease_id] = lease
        return lease.to_json(now), created

    def remove(self, lease_id: str) -> None:
        if self._leases.pop(lease_id, None) is None:
            raise LEASE_NOT_FOUND

    async def expire_due(self) -> list[Lease]:
        """Rolls back the proxies of every lapsed lease (and drops it); returns those leases."""
        now = self._clock()
        due = [lease for lease in self._leases.values() if lease.expires_at <= now]
        for lease in due:
            del self._leases[lease.lease_id]
            await self._restore(lease.proxies)
            log.warning(
                "lease %s lapsed (ttl %.3g s): toxics removed from %s",
                lease.lease_id,
                lease.ttl_s,
                ", ".join(lease.proxies) or "no proxy",
            )
        return due

    async def _restore(self, names: tuple[str, ...]) -> None:
        async with self._proxies.lock:
            for proxy in self._proxies.all():
                if proxy.name not in names:
                    continue
                proxy.toxics.reset()
                try:
                    await proxy.start()
                except ProxyAlreadyStartedError:
                    pass
                except ApiError as exc:  # its port taken meanwhile: the toxics are gone anyway
                    log.error("lease rollback: could not enable %s: %s", proxy.name, exc)

    async def run_expiry(self, every_s: float = EXPIRY_CHECK_S) -> None:
        """Until cancelled: lapsed leases rolled back within `every_s` of lapsing."""
        while True:
            try:
                await self.expire_due()
            except Exception:
                log.exception("lease expiry check failed")
            await asyncio.sleep(every_s)
