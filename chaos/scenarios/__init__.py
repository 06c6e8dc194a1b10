"""The named checks and scenarios: importing this package registers them (chaos/registry.py).

The checks are in checks.py, recovery_check.py and replicas.py, the stream-cut scenario in
stream_cut.py, the criticality scenario in criticality.py; the receipt-job experiments in
receipts/ (experiments.py, worker_crash.py, stalls.py).
"""

from chaos.scenarios import checks as _checks  # noqa: F401 - registers the checks
from chaos.scenarios import criticality as _criticality  # noqa: F401 - registers criticality
from chaos.scenarios import fault_trace as _fault_trace  # noqa: F401 - registers fault_trace
from chaos.scenarios import recovery_check as _recovery  # noqa: F401 - registers recovery
from chaos.scenarios import replicas as _replicas  # noqa: F401 - registers the replicas check
from chaos.scenarios import stream_cut as _stream_cut  # noqa: F401 - registers stream-cut
from chaos.scenarios.receipts import experiments as _job_scenarios  # noqa: F401 - registers the job scenarios
from chaos.scenarios.receipts import stalls as _stall_scenarios  # noqa: F401 - registers the stall scenarios
from chaos.scenarios.receipts import worker_crash as _worker_crash  # noqa: F401 - registers worker-crash
