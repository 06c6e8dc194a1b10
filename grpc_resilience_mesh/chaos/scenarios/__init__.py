"""The named checks and scenarios. Importing this package declares them (declarations.py):
names, metrics and params models as data, each implementation imported when a run calls it.

The checks are in checks.py, recovery_check.py, replicas.py and fault_trace.py, the
stream-cut scenario in stream_cut.py, the criticality scenario in criticality.py; the
receipt-job experiments in receipts/ (experiments.py, worker_crash.py, stalls.py).
"""

from grpc_resilience_mesh.chaos.scenarios import declarations as _declarations  # noqa: F401 - declares the built-ins
