"""Hedging's settings (an edge policy's `hedging:` section), after gRFC A6's hedgingPolicy.

A plain frozen dataclass, so a user builds one without any policy loader; a bad value raises
`HedgingOptionError` naming its field (inside a policy file, pydantic reports it under the
section's path).
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc


class HedgingOptionError(ValueError):
    """One field of HedgingOptions has a value outside its range; `field` names it."""

    def __init__(self, field: str, value: object, rule: str) -> None:
        shown = repr(value)
        super().__init__(f"{field}: {shown[:60]}{'...' if len(shown) > 60 else ''} {rule}")
        self.field = field


MAX_ATTEMPTS_CAP = 5
"""gRFC A6 caps hedging (and retry) attempts at 5: more is read as 5."""


@dataclass(frozen=True, slots=True)
class HedgingOptions:
    """When a call is sent again while its first attempt is still in flight.

    A method hedges or retries, never both (gRFC A6): the methods this applies to bypass the
    retry strategy. Only methods that may be sent twice are hedged (mesh.resilience.idempotency).
    """

    enabled: bool = False
    """Off by default: every hedge is extra load on the dependency."""
    hedging_delay_s: float = 0.05
    """[0, 60]: wait before each next hedge while no attempt has answered; 0 sends all at
    once. Pick about the dependency's p95: fewer than 1 call in 20 then pays an extra attempt."""
    max_attempts: int = 2
    """[2, 5] (A6's cap): attempts per call, the first included. 2 already cuts the tail one
    slow replica makes; each more adds load for a rarer case."""
    non_fatal_codes: tuple[str, ...] = ("UNAVAILABLE",)
    """gRPC code names (not OK): an attempt failing with one lets the others go on and the
    next hedge start at once (after the server's pushback, if any); any other code ends the
    call. UNAVAILABLE: the attempt was not served, another replica may well be."""
    methods: tuple[str, ...] = ()
    """Full method names (`/pkg.Service/Method`) that hedge; empty: every method of the edge
    (that may be sent twice)."""

    def __post_init__(self) -> None:
        _check_number(self, "hedging_delay_s", 0.0, 60.0)
        _check_number(self, "max_attempts", 2, MAX_ATTEMPTS_CAP, integer=True)
        for field in ("non_fatal_codes", "methods"):
            value = getattr(self, field)
            if isinstance(value, str | bytes):
                raise HedgingOptionError(field, value, "is not a list of names")
            object.__setattr__(self, field, tuple(value))
        names = []
        for name in self.non_fatal_codes:
            upper = name.upper() if isinstance(name, str) else name
            if upper not in grpc.StatusCode.__members__ or upper == "OK":
                raise HedgingOptionError("non_fatal_codes", name, "is not a gRPC error code name")
            names.append(upper)
        object.__setattr__(self, "non_fatal_codes", tuple(names))
        for method in self.methods:
            if not isinstance(method, str) or not method.startswith("/") or method.count("/") != 2:
                raise HedgingOptionError("methods", method, "is not a `/pkg.Service/Method` name")

    def hedges(self, method: str) -> bool:
        """Whether calls of `method` hedge (when they may be sent twice)."""
        return self.enabled and (not self.methods or method in self.methods)


def _check_number(
    options: HedgingOptions, field: str, low: float, high: float, *, integer: bool = False
) -> None:
    value = getattr(options, field)
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or value != value:
        raise HedgingOptionError(field, value, f"is not {'an integer' if integer else 'a number'}")
    if not low <= value <= high:
        raise HedgingOptionError(field, value, f"is not in [{low}, {high}]")
