"""Hedging's settings (an edge policy's `hedging:` section), after gRFC A6's hedgingPolicy.

A plain frozen dataclass on grpc_aio_resilience.options, as every strategy's settings; a bad
value raises `HedgingOptionError` (an OptionError) naming its field.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpc_aio_resilience.options import OptionError, check, code_names, option, quote


class HedgingOptionError(OptionError):
    """One field of HedgingOptions has a value outside its range; `field` names it (kept from
    before every options class raised OptionError, whose `path` says the same)."""

    def __init__(self, path: str, rule: str) -> None:
        super().__init__(path, rule)
        self.field = path.split(".")[0].split("[")[0]


MAX_ATTEMPTS_CAP = 5
"""gRFC A6 caps hedging (and retry) attempts at 5: more is read as 5."""


@dataclass(frozen=True, slots=True)
class HedgingOptions:
    """When a call is sent again while its first attempt is still in flight.

    A method hedges or retries, never both (gRFC A6): the methods this applies to bypass the
    retry strategy. Only methods that may be sent twice are hedged
    (grpc_aio_resilience.idempotency).
    """

    enabled: bool = option(False, doc="off by default: every hedge is extra load on the dependency")
    hedging_delay_s: float = option(
        0.05,
        ge=0,
        le=60,
        doc="wait before each next hedge while no attempt has answered; 0 sends all at once. "
        "Pick about the dependency's p95: fewer than 1 call in 20 then pays an extra attempt",
    )
    max_attempts: int = option(
        2,
        ge=2,
        le=MAX_ATTEMPTS_CAP,
        doc="attempts per call, the first included (A6's cap: 5). 2 already cuts the tail one "
        "slow replica makes; each more adds load for a rarer case",
    )
    non_fatal_codes: tuple[str, ...] = option(
        ("UNAVAILABLE",),
        doc="gRPC code names (not OK): an attempt failing with one lets the others go on and "
        "the next hedge start at once (after the server's pushback, if any); any other code "
        "ends the call. UNAVAILABLE: the attempt was not served, another replica may well be",
    )
    methods: tuple[str, ...] = option(
        (),
        doc="full method names (`/pkg.Service/Method`) that hedge; empty: every method of the "
        "edge (that may be sent twice)",
    )

    def __post_init__(self) -> None:
        try:
            check(self)
            code_names(self, "non_fatal_codes")
        except OptionError as err:
            raise HedgingOptionError(err.path, err.rule) from None
        for method in self.methods:
            if not method.startswith("/") or method.count("/") != 2:
                raise HedgingOptionError(
                    "methods", f"{quote(method)} is not a `/pkg.Service/Method` name"
                )

    def hedges(self, method: str) -> bool:
        """Whether calls of `method` hedge (when they may be sent twice)."""
        return self.enabled and (not self.methods or method in self.methods)
