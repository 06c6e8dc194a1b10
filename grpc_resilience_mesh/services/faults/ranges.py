"""The FaultAdmin's ranges: what a fault may ask for, as numbers.

Apart from the table that enforces them (injection.py), so what checks a fault before it is
sent (a chaos experiment's model) reads them without loading the server layers.
"""

MAX_DELAY_S = 600.0
"""Longest injected delay: ten minutes, far past any deadline the mesh sets."""
MAX_PUSHBACK_MS = 600_000
"""Largest injected grpc-retry-pushback-ms (ten minutes)."""
MAX_SERVICE_TIME_FACTOR = 100.0
"""The largest slowdown of a declared worker pool's service time."""
MAX_AFTER_MESSAGES = 1_000_000
"""The most stream messages a fault may let through before it strikes."""
