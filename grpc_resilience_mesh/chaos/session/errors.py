"""How a session ends short of its results; the CLI turns each into its exit code.

SessionRefused (ValueError)      bad input, nothing started: exit 2
SessionFailed (RuntimeError)     a run that could not finish: exit 1
 +-- MeshDidNotStart             the launcher's error (LaunchError), said as such
 +-- ReportFailed                an experiment's report was not written (every one ran)
"""

from __future__ import annotations


class SessionRefused(ValueError):
    """Bad input (an experiment file, the target, the policy, --xds here): one line, naming
    the file and the key where there is one; nothing was started, or what was is stopped."""


class SessionFailed(RuntimeError):
    """The run could not finish; the message is the line the user reads."""


class MeshDidNotStart(SessionFailed):
    """The launcher failed (starting the mesh, or a service the run restarts)."""

    def __init__(self, cause: Exception) -> None:
        self.cause = str(cause)
        super().__init__(f"could not start the mesh: {cause}")


class ReportFailed(SessionFailed):
    """Writing one experiment's report failed (the experiment itself ran)."""
