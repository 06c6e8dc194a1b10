"""Adaptive concurrency limits: pure algorithms that turn (start, RTT, in flight, dropped)
samples into a concurrency limit, following Netflix's concurrency-limits-core 0.5.4.

No I/O, no asyncio, no gRPC: an admission layer measures each call and feeds `on_sample`, then
reads `limit`. The reference is Apache-2.0; this is an independent Python rendering of its
published rules (each class names the one it follows), checked against the real jar by
tests/integration/peers/test_limits_differential.py.

    Limit (protocol)
      FixedLimit        static, today's `max_in_flight`
      AIMDLimit         +1 when busy, x backoff_ratio on a drop or a timeout (client side)
      VegasLimit        queue estimate L x (1 - minRTT/RTT) against log10 thresholds
      Gradient2Limit    long exponential average of RTT against the sample, plus a queue allowance
      WindowedLimit     wraps one of them: one aggregated sample per window
"""

from grpc_aio_resilience.limits.aimd import AIMDLimit, AIMDSettings
from grpc_aio_resilience.limits.base import Limit, log10_root
from grpc_aio_resilience.limits.fixed import FixedLimit
from grpc_aio_resilience.limits.gradient2 import Gradient2Limit, Gradient2Settings
from grpc_aio_resilience.limits.vegas import VegasLimit, VegasSettings
from grpc_aio_resilience.limits.windowed import WindowedLimit, WindowedSettings

__all__ = [
    "AIMDLimit",
    "AIMDSettings",
    "FixedLimit",
    "Gradient2Limit",
    "Gradient2Settings",
    "Limit",
    "VegasLimit",
    "VegasSettings",
    "WindowedLimit",
    "WindowedSettings",
    "log10_root",
]
