"""The ranges of an experiment's numbers, each derived from what consumes it.

A number the schema accepts must be one the run can use as written: a time the fault schedule
can reach, a bound a measurement can pass or fail, an integer Toxiproxy and the FaultAdmin
decode. Each bound says beside it where it comes from.
"""

from __future__ import annotations

import math

LONGEST_LOAD_S = 600.0 * 10
"""The longest a fault phase can last: `load.max_duration_s` (at most 600) times `load.repeat`
(at most 10). A time beyond it is a fault that never starts or an abort that never fires."""

GO_INT64_MAX = 2**63 - 1
"""Toxiproxy decodes every toxic attribute into a Go int64 (and refuses a larger number with
400)."""

MAX_SWEEP_POINTS = 50
"""A sweep's load points: a curve is read from a handful (the catalogue's has 5, its demo 3),
and each point is a variant of every line, with its own load and two steady-state checks."""

MAX_VARIANTS = 100
"""Variants in one file, a sweep's lines x points included: four times the catalogue's most
(overload-sweep's 25). Each is a policy swap, its loads, and a row of the report; checked before
any variant is validated, so a file of thousands is refused at once."""

MAX_PLANNED_S = 3600.0
"""One experiment's loads as `mesh chaos plan` counts them: an hour, what a CI job or a class can
wait for (the catalogue's longest, overload-sweep, plans 330 s of loads; `mesh chaos plan --all`
926 s for all 22 files, restarts and capacity included)."""

TOXIC_ATTRIBUTE_MAX: dict[tuple[str, str], tuple[int, str]] = {
    # Durations: Toxiproxy multiplies the number by time.Millisecond (or Microsecond) into a
    # time.Duration, an int64 of nanoseconds; a larger number overflows into a negative wait.
    ("latency", "latency"): (GO_INT64_MAX // 10**6, "ms"),
    ("latency", "jitter"): (GO_INT64_MAX // 10**6, "ms"),
    ("slow_close", "delay"): (GO_INT64_MAX // 10**6, "ms"),
    ("timeout", "timeout"): (GO_INT64_MAX // 10**6, "ms"),
    ("reset_peer", "timeout"): (GO_INT64_MAX // 10**6, "ms"),
    ("slicer", "delay"): (GO_INT64_MAX // 10**3, "us"),
}
"""The largest value of a toxic attribute that Toxiproxy applies as written, and its unit;
every other attribute (rate in KB/s, bytes, slice sizes) is a plain Go int64."""


def finite(value: float, where: str) -> None:
    """NaN passes no comparison and inf every bound: a verdict on either is decided in
    advance, so a bound must be a finite number."""
    if not math.isfinite(value):
        raise ValueError(f"{where}: must be a finite number, not {value}")


def seconds(value: float, where: str, low: float = 0.0) -> None:
    """A time after the load starts: finite, and within the longest a fault phase can last."""
    if not (math.isfinite(value) and low <= value <= LONGEST_LOAD_S):
        raise ValueError(
            f"{where}: must be a finite number of seconds in [{low:g}, {LONGEST_LOAD_S:g}] "
            f"(a fault phase lasts at most load.max_duration_s x load.repeat = "
            f"{LONGEST_LOAD_S:g} s), not {value}"
        )


def check_bounds(low: float | None, high: float | None) -> None:
    """A tolerance's min and max: finite, and min <= max (else it can never hold)."""
    for name, value in (("min", low), ("max", high)):
        if value is not None:
            finite(value, name)
    if low is not None and high is not None and low > high:
        raise ValueError(f"min {low:g} is above max {high:g}: no value can hold")


def fault_times(start_s: float, stop_s: float | None) -> None:
    """A fault's schedule: both times reachable, and the fault removed after it is applied."""
    seconds(start_s, "start_s")
    if stop_s is not None:
        seconds(stop_s, "stop_s")
        if stop_s <= start_s:
            raise ValueError(
                f"stop_s {stop_s:g} must be after start_s {start_s:g} "
                "(the fault would be removed before it is applied)"
            )


def within_load(starts: list[float], cap_s: float, variant: str) -> None:
    """Every fault of a variant starts before its load's time cap: a fault that never starts
    leaves a variant that met no fault, which still holds every expectation it lacks."""
    for i, start_s in enumerate(starts):
        if start_s >= cap_s:
            raise ValueError(
                f"variant {variant}: faults.{i}.start_s {start_s:g} must be below the load's "
                f"time cap, load.max_duration_s x load.repeat = {cap_s:g} s (the fault would "
                "never start)"
            )


def toxic_attribute(toxic: str, key: str, value: int) -> None:
    """A toxic attribute Toxiproxy decodes and applies as written."""
    high, unit = TOXIC_ATTRIBUTE_MAX.get((toxic, key), (GO_INT64_MAX, ""))
    if not 0 <= value <= high:
        raise ValueError(
            f"attributes.{key}: must be >= 0 and <= {high}{' ' + unit if unit else ''} "
            f"(what Toxiproxy applies as written), not {value}"
        )
