"""The built-in checks and scenarios: importing this package registers them (chaos/registry.py).

The checks are in checks.py; the job scenarios in chaos/jobs/experiments.py and
chaos/jobs/stalls.py.
"""

from chaos.builtin import checks as _checks  # noqa: F401 - registers the checks
from chaos.builtin import replicas as _replicas  # noqa: F401 - registers the replicas check
from chaos.builtin import stream_cut as _stream_cut  # noqa: F401 - registers stream-cut
from chaos.jobs import experiments as _job_scenarios  # noqa: F401 - registers the job scenarios
from chaos.jobs import stalls as _stall_scenarios  # noqa: F401 - registers the stall scenarios
