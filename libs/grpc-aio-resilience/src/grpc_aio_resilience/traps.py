"""Compositions that build fine and then fail quietly, found when the pipeline is built.

Each trap is a Python warning (ResiliencePolicyWarning), not a log record: the Python docs'
rule for libraries is `warnings.warn()` when the application can remove the cause by changing
its code or settings, and every trap here is removed that way. A user can then filter them
(`warnings.filterwarnings("ignore", category=ResiliencePolicyWarning)`), route them to logging
(`logging.captureWarnings`), or turn them into test failures (`-W error::...`).

A trap is warned once per process: a policy swap that rebuilds the same composition (PolicyAdmin
rebuilds every edge's pipeline) stays silent, one that changes its numbers warns anew, and
`describe()` of every pipeline built with it still lists it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from google.protobuf import descriptor_pool

from grpc_aio_resilience.idempotency import RetryPermission, retry_permission

if TYPE_CHECKING:
    from grpc_aio_resilience.edge_policy import EdgePolicy


class ResiliencePolicyWarning(UserWarning):
    """A pipeline was built with a composition that silently does less than it says."""


@dataclass(frozen=True)
class Trap:
    """One trap of one edge (and method, for a per-method trap), with what to change."""

    kind: str
    """never_retried, unknown_service, breaker_opens_on_one_call or attempts_outlast_deadline."""
    dependency: str
    method: str
    """The method (`/pkg.Service/Method`) or service it concerns; "" for the whole edge."""
    message: str
    """What happens, with the numbers, and which option to change."""

    def __str__(self) -> str:
        return self.message


_WARNED_CAP = 4096
_warned: dict[Trap, None] = {}
"""Traps already warned in this process, oldest first (bounded: a flood of distinct swaps
cannot grow it without end; past the cap the oldest may be warned again)."""


def warn_once(traps: Iterable[Trap], *, stacklevel: int = 2) -> None:
    """Warn each trap not warned before in this process; `stacklevel` as `warnings.warn`'s,
    counted from the caller of this function."""
    for trap in traps:
        if trap in _warned:
            continue
        _warned[trap] = None
        if len(_warned) > _WARNED_CAP:
            del _warned[next(iter(_warned))]
        warnings.warn(trap.message, ResiliencePolicyWarning, stacklevel=stacklevel + 1)


def service_methods(services: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(every `/pkg.Service/Method` of `services`, the services the protobuf descriptor pool
    does not know: their stubs' `_pb2` module was not imported, so no method of theirs can be
    found to be idempotent)."""
    methods: list[str] = []
    unknown: list[str] = []
    pool = descriptor_pool.Default()
    for name in services:
        if not name:
            continue
        try:
            service = pool.FindServiceByName(name)
        except KeyError:
            unknown.append(name)
            continue
        methods.extend(f"/{service.full_name}/{m.name}" for m in service.methods)
    return tuple(methods), tuple(unknown)


def find_traps(
    policy: EdgePolicy,
    dependency: str,
    strategies: Sequence[str],
    methods: Sequence[str] = (),
    unknown_services: Sequence[str] = (),
) -> tuple[Trap, ...]:
    """The traps of a pipeline of `strategies` (names, outermost first) built from `policy`."""
    if "retry" not in strategies:
        return ()
    traps = [*_never_retried(policy, dependency, methods, unknown_services)]
    if "breaker" in strategies and strategies.index("retry") < strategies.index("breaker"):
        traps.extend(_breaker_opens_on_one_call(policy, dependency))
    traps.extend(_attempts_outlast_deadline(policy, dependency))
    return tuple(traps)


def _never_retried(
    policy: EdgePolicy, dependency: str, methods: Sequence[str], unknown: Sequence[str]
) -> Iterable[Trap]:
    attempts = policy.retry.max_attempts
    for method in methods:
        if retry_permission(method) is RetryPermission.NEVER:
            yield Trap(
                "never_retried",
                dependency,
                method,
                f"{dependency}: retry is off for {method}: no idempotency declared, so its "
                f"calls are sent once although retry.max_attempts is {attempts}; declare "
                "`option idempotency_level = IDEMPOTENT;` (or NO_SIDE_EFFECTS) on the rpc, or "
                "give its request an `idempotency_key` field",
            )
    for service in unknown:
        yield Trap(
            "unknown_service",
            dependency,
            service,
            f"{dependency}: service {service} is not in the protobuf descriptor pool, so none "
            f"of its calls is retried although retry.max_attempts is {attempts}; import its "
            "_pb2 module before building the pipeline, or check the service's full name",
        )


def _breaker_opens_on_one_call(policy: EdgePolicy, dependency: str) -> Iterable[Trap]:
    """Retry outside the breaker: every attempt is one outcome, so a breaker that judges no
    more outcomes than one call's attempts can be opened by a single failing call."""
    attempts = policy.retry.max_attempts
    breaker = policy.breaker
    whose = "its method" if breaker.scope == "method" else "the whole edge"
    if 0 < breaker.consecutive_failures <= attempts:
        yield Trap(
            "breaker_opens_on_one_call",
            dependency,
            "",
            f"{dependency}: breaker.consecutive_failures ({breaker.consecutive_failures}) <= "
            f"retry.max_attempts ({attempts}): retry sits outside the breaker, so the "
            f"attempts of one failing call open the breaker for every call of {whose}; set "
            f"breaker.consecutive_failures above {attempts} or retry.max_attempts below "
            f"{breaker.consecutive_failures}",
        )
    if breaker.failure_rate is not None and breaker.min_calls <= attempts:
        yield Trap(
            "breaker_opens_on_one_call",
            dependency,
            "",
            f"{dependency}: breaker.min_calls ({breaker.min_calls}) <= retry.max_attempts "
            f"({attempts}): the attempts of one failing call fill the breaker's window at a "
            f"failure rate of 1.0 (>= failure_rate {breaker.failure_rate}) and open it for "
            f"every call of {whose}; set breaker.min_calls (and window_size) above {attempts}",
        )


def _attempts_outlast_deadline(policy: EdgePolicy, dependency: str) -> Iterable[Trap]:
    """Attempts that time out cannot all have their own attempt_s inside total_s; the last
    runs on the call's deadline, whose timeout retry and breaker ignore."""
    deadline, attempts = policy.deadline, policy.retry.max_attempts
    needed_s = deadline.attempt_s * attempts
    if needed_s <= deadline.total_s * (1 + 1e-9):
        return
    full = math.floor(deadline.total_s / deadline.attempt_s + 1e-9)
    left_s = max(0.0, round(deadline.total_s - full * deadline.attempt_s, 6))
    most_s = math.floor(deadline.total_s / attempts * 1000) / 1000
    yield Trap(
        "attempts_outlast_deadline",
        dependency,
        "",
        f"{dependency}: deadline.attempt_s ({deadline.attempt_s:g}) x retry.max_attempts "
        f"({attempts}) = {needed_s:.3g} s > deadline.total_s ({deadline.total_s:g}): calls "
        f"that time out get {full} full attempt{'s' if full != 1 else ''} and then "
        f"{left_s:.3g} s at most for the next, "
        "whose timeout is the call's deadline (retry and breaker ignore it); raise "
        f"deadline.total_s to {math.ceil(round(needed_s * 1000, 6)) / 1000:g}, or lower "
        f"deadline.attempt_s to {most_s:g} or retry.max_attempts to {max(1, full)}",
    )


@dataclass(frozen=True)
class PipelineSource:
    """What a pipeline was built from (build_pipeline keeps it on the pipeline for describe())."""

    policy: EdgePolicy
    dependency: str
    methods: tuple[str, ...]
    """Every method of the services it was built for, `/pkg.Service/Method`."""
    traps: tuple[Trap, ...]


def examine(
    policy: EdgePolicy, dependency: str, strategies: Sequence[str], services: Iterable[str]
) -> PipelineSource:
    """A built pipeline's source, its traps found and warned once (at build_pipeline's caller,
    whose caller this is)."""
    methods, unknown = service_methods(services)
    traps = find_traps(policy, dependency, strategies, methods, unknown)
    warn_once(traps, stacklevel=3)
    return PipelineSource(policy, dependency, methods, traps)
