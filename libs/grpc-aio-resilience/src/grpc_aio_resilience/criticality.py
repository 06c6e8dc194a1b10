"""Request criticality (Google SRE, "Handling Overload"): carried with the call, hop to hop.

A call's criticality says what to shed first when a server is overloaded: SHEDDABLE before
SHEDDABLE_PLUS before CRITICAL before CRITICAL_PLUS. It travels as the `resilience-criticality`
request metadata; a server stores the inbound value in a context variable for the calls it makes
while serving (as the deadline is), and a client interceptor sends the current value on, so a
call keeps its criticality across every hop unless a service sets another on purpose.
"""

from __future__ import annotations

import contextvars
import enum
from collections.abc import Iterable

METADATA_KEY = "resilience-criticality"


class Criticality(enum.IntEnum):
    """Higher is more important; the names are SRE's. No member is 0, so none is falsy: a
    SHEDDABLE call is never mistaken for a call that named no criticality."""

    SHEDDABLE = 1
    SHEDDABLE_PLUS = 2
    CRITICAL = 3
    CRITICAL_PLUS = 4

    @classmethod
    def parse(cls, value: str | bytes | None) -> Criticality | None:
        """The criticality a metadata value names, or None for a missing or unknown value (an
        unknown value is never an error: the server falls back to its default)."""
        named = _BY_NAME.get(value)  # the exact name: what a mesh hop sends
        if named is not None:
            return named
        if isinstance(value, bytes):
            try:
                value = value.decode("ascii")
            except UnicodeDecodeError:
                return None
        if not value:
            return None
        return _BY_NAME.get(value.strip().upper())


_BY_NAME: dict[object, Criticality] = {name: c for name, c in Criticality.__members__.items()}
"""Each member by its name (a lookup: `__members__` builds a mapping proxy on every read)."""

DEFAULT = Criticality.CRITICAL
"""What a call carries when nobody said otherwise (SRE's default for user-facing requests)."""

inbound_var: contextvars.ContextVar[Criticality | None] = contextvars.ContextVar(
    "mesh_inbound_criticality", default=None
)
"""What `current`, `set_current` and `reset_current` read and set; the inbound layer sets it
through its own methods (no Python frame of ours on every call)."""


def from_metadata(metadata: Iterable[tuple[str, str | bytes]] | None) -> Criticality | None:
    """The `resilience-criticality` of a call's metadata, if it names one."""
    for key, value in metadata or ():
        if key == METADATA_KEY:
            return Criticality.parse(value)
    return None


def current() -> Criticality | None:
    """The criticality of the call being served (None outside a call, or when it named none)."""
    return inbound_var.get()


def set_current(value: Criticality | None) -> contextvars.Token[Criticality | None]:
    """Makes `value` the criticality of the calls made from here on in this context."""
    return inbound_var.set(value)


def reset_current(token: contextvars.Token[Criticality | None]) -> None:
    inbound_var.reset(token)
