"""The built-in checks and scenarios: importing this module registers them (chaos/registry.py)."""

from chaos.jobs import experiments as _job_scenarios  # noqa: F401 - registers the job scenarios
from chaos.run import checks as _checks  # noqa: F401 - registers the checks
