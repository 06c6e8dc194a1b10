"""The kinds of a request's fate (fates.py) and the reasons of a shed one, apart: a tool that only
names them (an experiment's metric names, a dashboard) reads this module without importing
grpc."""

from __future__ import annotations

from typing import Literal, get_args

KINDS = (
    "ok",
    "ok-after-retry",
    "ok-degraded",
    "failed-not-retryable",
    "failed-deadline",
    "failed-retry-skipped",
    "shed",
    "client-throttled",
)
"""Every fate is one of these kinds, with its detail in parentheses where it has one."""

ShedReason = Literal[
    "limit", "queue_full", "queue_timeout", "deadline", "criticality", "intake", "ratio"
]
SHED_REASONS: tuple[ShedReason, ...] = get_args(ShedReason)
"""Every `reason` of a refusal (ShedError's, grpc_aio_resilience.admission's): its
`mesh_server_shed_total` label, the `call shed` event's `mesh.reason`, the LIMIT of a
`shed(SERVICE:LIMIT)` fate. Here, not in admission nor in errors, so what names the
metrics (a chaos scenario's declaration) loads neither the limiters nor grpc."""
