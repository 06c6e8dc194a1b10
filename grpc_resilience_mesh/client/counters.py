"""The services' Prometheus counters, scraped before and after a run and subtracted.

Experiments read the same numbers a user sees on /metrics: calls that reached a service,
retries, breaker and bulkhead rejections, fallbacks, shed calls.
"""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from grpc_resilience_mesh.services.topology import replica_of

Key = tuple[str, str, frozenset[tuple[str, str]]]
"""(service, sample name, labels)."""


@dataclass
class Snapshot:
    """Every sample of every service at one moment; missing services are listed, not fatal."""

    values: dict[Key, float] = field(default_factory=dict)
    unreachable: list[str] = field(default_factory=list)

    def __sub__(self, earlier: Snapshot) -> Snapshot:
        # A counter below its earlier value belongs to a restarted process: it counted from 0.
        diff = {
            k: v - earlier.values.get(k, 0.0) if v >= earlier.values.get(k, 0.0) else v
            for k, v in self.values.items()
        }
        return Snapshot(diff, sorted(set(self.unreachable) | set(earlier.unreachable)))

    def total(self, name: str, service: str | None = None, **labels: str) -> float:
        """Sum of `name` over samples matching `service` and every given label ('*' = any)."""
        wanted = {k: v for k, v in labels.items() if v != "*"}
        out = 0.0
        for (svc, sample, lbls), value in self.values.items():
            # A replica's samples count as its service's (profile-2 as profile).
            if sample != name or (service is not None and replica_of(svc) != service):
                continue
            d = dict(lbls)
            if all(d.get(k) == v for k, v in wanted.items()):
                out += value
        return out

    def total_nonzero(self, name: str) -> int:
        """How many samples of `name` (on any service) are not 0: e.g. breakers not closed."""
        return sum(1 for (_, sample, _), value in self.values.items() if sample == name and value)

    def gauge(self, name: str, service: str, **labels: str) -> dict[str, float]:
        """Current values of a gauge by its `method` label (e.g. breaker state)."""
        found: dict[str, float] = {}
        for (svc, sample, lbls), value in self.values.items():
            d = dict(lbls)
            if (
                replica_of(svc) == service
                and sample == name
                and all(d.get(k) == v for k, v in labels.items())
            ):
                method = d.get("method", "")
                found[method] = max(found.get(method, value), value)
        return found


def read(
    metrics_urls: Mapping[str, str],
    timeout_s: float = 2.0,
    keep: Callable[[str], str] | None = None,
) -> Snapshot:
    """Every service's /metrics now (urllib: the tooling's one HTTP client); a service that
    does not answer (refused, an HTTP error, past `timeout_s`) is listed as unreachable.
    `keep` filters the exposition text before it is parsed (parsing is most of the cost)."""
    snap = Snapshot()
    for service, url in metrics_urls.items():
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as response:
                text = response.read().decode()
        except (urllib.error.URLError, OSError, ValueError):
            snap.unreachable.append(service)
            continue
        _add(snap, service, text if keep is None else keep(text))
    return snap


async def scrape(metrics_urls: Mapping[str, str], timeout_s: float = 2.0) -> Snapshot:
    """`read`, on a thread: the runner's event loop keeps running while a service is slow."""
    return await asyncio.to_thread(read, metrics_urls, timeout_s)


def _add(snap: Snapshot, service: str, text: str) -> None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            key = (service, sample.name, frozenset(sample.labels.items()))
            snap.values[key] = float(sample.value)
