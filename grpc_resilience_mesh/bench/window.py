"""One variant's measured window: what `mesh bench mesh` and the clients beside it (ghz) compare."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Window"]


@dataclass
class Window:
    """One variant's measured window in one round."""

    requests: int
    elapsed_s: float
    p50_ms: float
    p99_ms: float
    degraded: int
    cpu_s: dict[str, float] = field(default_factory=dict)
