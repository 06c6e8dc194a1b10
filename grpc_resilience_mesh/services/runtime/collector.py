"""The garbage collector in a service process: what the imports made is frozen out of its reach.

A service imports ~50,000 long-lived objects (modules, classes, functions, protobuf
descriptors, the OpenTelemetry SDK). CPython's full collections traverse all of them, and
requests in flight (spans, contexts, calls) push the young generations over their thresholds
often enough that those traversals cost tens of microseconds per call (`mesh bench overhead
--tracing`, issue 15). `gc.freeze()` moves them to the permanent generation once; collections
then look only at what requests create. Called by the process entry point only (not by
`serve()`, which tests run in-process), after one collection so no start-up garbage is pinned.
"""

from __future__ import annotations

import gc


def freeze_startup_objects() -> int:
    """Collects once, then freezes every object alive now; returns how many are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
