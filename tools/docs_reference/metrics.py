"""docs/reference/metrics.md: every metric a service registers, read from a real registry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry

from tools.docs_reference import sources
from tools.docs_reference.render import code, header, table


def _families(registry: CollectorRegistry) -> Iterator[tuple[str, str, str, tuple[str, ...]]]:
    """(name, type, help, labels) of every metric in `registry`, in registration order."""
    collectors: list[Any] = list(registry._collector_to_names)  # no public list
    for collector in collectors:
        if hasattr(collector, "_labelnames") and hasattr(collector, "_type"):
            yield (
                collector._name,
                collector._type,
                collector._documentation,
                tuple(collector._labelnames),
            )
            continue
        for family in collector.collect():  # a custom collector: its families, no samples
            yield family.name, family.type, family.documentation, tuple(family._labelnames)


def registered() -> list[tuple[str, str, str, tuple[str, ...]]]:
    """Every metric of a mesh service and of the receipt jobs, as one service registers them."""
    registry = CollectorRegistry()
    metrics = sources.MeshMetrics(registry, "reference")
    metrics.watch_pipelines(dict)
    metrics.watch_replicas(dict)
    sources.JobMetrics(registry, "receipts")
    return list(_families(registry))


def _shown(name: str, kind: str) -> str:
    return f"{name}_total" if kind == "counter" and not name.endswith("_total") else name


def page() -> str:
    rows = [
        (code(_shown(name, kind)), kind, ", ".join(labels) or "-", doc)
        for name, kind, doc, labels in registered()
    ]
    intro = (
        "\nEach service serves these on its `METRICS_ADDR` (`/metrics`). The `mesh_jobs_*` "
        "metrics are on payment (its outbox relay) and the notification worker. What the "
        "labels mean: [observability](../observability.md#metrics).\n\n"
    )
    return (
        header("Metrics", "the Prometheus registry a service builds (`MeshMetrics`, `JobMetrics`)")
        + intro
        + table(("metric", "type", "labels", "help"), rows)
    )
