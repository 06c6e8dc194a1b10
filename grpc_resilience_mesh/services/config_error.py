"""The one error for a bad environment variable: a leaf every layer may raise.

`grpc_resilience_mesh.services.runtime.server.run` turns it into one line on stderr naming the
variable, and exit 2.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A variable is missing or malformed (or names an address that cannot be bound); the
    message names it."""
