"""The project's one percentile: nearest rank, for every latency figure in reports and benches.

Nearest rank (not linear interpolation) because a latency figure should be one some request really
had: with few samples an interpolated p99 is a value nobody saw, and `statistics.quantiles`
extrapolates beyond the slowest; nearest rank never exceeds the max and p100 is the max. The Go
generator (grpc_resilience_mesh/loadgen/go) reports no percentiles, only records: every figure is
this function over its records (tests/integration/loadgen/test_percentile_agrees.py). The console's
quantiles are another thing: Prometheus' histogram_quantile over bucket counts, where no sample
exists to pick (grpc_resilience_mesh/console/metrics_view.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def percentile(values: Iterable[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100): the smallest value with at least q% of the
    values at or below it; 0.0 for no values."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q}: expected 0..100")
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(1, min(len(ordered), math.ceil(q * len(ordered) / 100)))
    return ordered[rank - 1]
