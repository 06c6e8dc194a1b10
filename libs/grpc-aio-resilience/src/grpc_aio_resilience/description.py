"""`describe(pipeline)`: what a built pipeline is, as data a unit test can assert on.

In the spirit of Polly.Testing's `GetPipelineDescriptor()`: the strategies outermost first,
each with its options (plain JSON values) and, where it depends on the method, what it will do
for each method the pipeline was built for; and the traps found when it was built
(grpc_aio_resilience.traps), which stay listed here after their one warning.

    d = describe(pipeline)
    assert [s.name for s in d.strategies][:3] == ["bulkhead", "total_deadline", "retry"]
    assert d.strategy("retry").methods["/pkg.Ledger/Post"].startswith("off")
    print(d)            # a short text form; json.dumps(d.to_dict()) for the data
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import TYPE_CHECKING, Any

from google.protobuf import descriptor_pool

from grpc_aio_resilience.idempotency import KEY_FIELD, RetryPermission, retry_permission
from grpc_aio_resilience.options import to_dict
from grpc_aio_resilience.traps import Trap

if TYPE_CHECKING:
    from grpc_aio_resilience.edge_policy import EdgePolicy
    from grpc_aio_resilience.pipeline import Pipeline

_SECTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    # strategy name -> (its EdgePolicy section, the fields it uses; () = the whole section)
    "total_deadline": ("deadline", ("total_s",)),
    "attempt_timeout": ("deadline", ("attempt_s", "min_attempt_s")),
}


@dataclass(frozen=True)
class StrategyDescriptor:
    """One strategy of a pipeline: its name, its options, and what it does per method."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    """The settings it was built with, as JSON values (nested sections as dicts)."""
    methods: dict[str, str] = field(default_factory=dict)
    """Per method (`/pkg.Service/Method`), what it will do; only strategies whose behaviour
    depends on the method (retry, hedging, breaker) fill it."""


@dataclass(frozen=True)
class PipelineDescriptor:
    """A built pipeline described: `strategies` outermost first, `traps` found at its build."""

    dependency: str
    order: str
    """The policy's `order` (where retry sits relative to the breaker); "" if unknown."""
    strategies: tuple[StrategyDescriptor, ...]
    traps: tuple[Trap, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.strategies)

    def strategy(self, name: str) -> StrategyDescriptor:
        for s in self.strategies:
            if s.name == name:
                return s
        raise KeyError(f"no {name!r} strategy in pipeline {self.names}")

    def to_dict(self) -> dict[str, Any]:
        """Plain dicts, lists and scalars: `json.dumps` takes it as it is."""
        return _as_json(asdict(self))  # type: ignore[no-any-return]

    def __str__(self) -> str:
        head = f"{self.dependency or 'pipeline'} ({self.order or 'custom order'}), outermost first:"
        lines = [head]
        for s in self.strategies:
            lines.append(f"  {s.name:<16}{_flat(s.options)}".rstrip())
            lines.extend(_method_lines(s.methods))
        lines.extend(f"  ! {trap.message}" for trap in self.traps)
        return "\n".join(lines)


def describe(pipeline: Pipeline, *, methods: Iterable[str] = ()) -> PipelineDescriptor:
    """Describes `pipeline` for the methods it was built for (build_pipeline's `services`)
    and `methods` besides; a pipeline not made by build_pipeline has names only."""
    source = pipeline.source
    if source is None:
        return PipelineDescriptor("", "", tuple(StrategyDescriptor(n) for n in pipeline.names))
    every = tuple(dict.fromkeys((*source.methods, *methods)))
    strategies = tuple(
        StrategyDescriptor(
            name, _options(source.policy, name), _per_method(source.policy, name, every)
        )
        for name in pipeline.names
    )
    return PipelineDescriptor(source.dependency, source.policy.order, strategies, source.traps)


def _options(policy: EdgePolicy, name: str) -> dict[str, Any]:
    section_name, fields = _SECTIONS.get(name, (name, ()))
    values = _plain(getattr(policy, section_name, None))
    values.pop("enabled", None)  # a strategy in the pipeline is on
    for key, value in values.items():
        if isinstance(value, dict) and value.get("enabled") is False:
            values[key] = {"enabled": False}  # an off part's numbers do nothing
    return {k: values[k] for k in fields} if fields else values


def _plain(section: object) -> dict[str, Any]:
    """A policy section (an options dataclass) as JSON values."""
    if is_dataclass(section) and not isinstance(section, type):
        return to_dict(section)
    return {}


def _per_method(policy: EdgePolicy, name: str, methods: tuple[str, ...]) -> dict[str, str]:
    hedging = getattr(policy, "hedging", None)
    if name == "retry":
        return {
            m: "off: hedged instead"
            if _hedged(hedging, m)
            else _may_repeat(m, policy.retry.max_attempts)
            for m in methods
        }
    if name == "hedging" and hedging is not None:
        return {m: _hedging_does(hedging, m) for m in methods}
    if name == "breaker":
        does = "its own breaker" if policy.breaker.scope == "method" else "the edge's one breaker"
        return dict.fromkeys(methods, does)
    return {}


def _hedged(hedging: Any, method: str) -> bool:
    """Whether `method`'s calls hedge in place of retrying (grpc_aio_resilience.hedging)."""
    hedges = getattr(hedging, "hedges", None)
    return bool(
        hedges is not None
        and hedges(method)
        and retry_permission(method) is not RetryPermission.NEVER
        and not _server_streaming(method)
    )


def _hedging_does(hedging: Any, method: str) -> str:
    if retry_permission(method) is RetryPermission.NEVER:
        return "off: no idempotency declared"
    if _server_streaming(method):
        return "off: a stream never hedges"
    if not _hedged(hedging, method):
        return "off: not one of hedging.methods"
    does = f"up to {hedging.max_attempts} attempts, {hedging.hedging_delay_s:g} s apart"
    if retry_permission(method) is RetryPermission.WITH_KEY:
        does = f"only with {KEY_FIELD} set: {does}"
    return does


def _may_repeat(method: str, attempts: int) -> str:
    """What retry does for `method`: its idempotency decides (grpc_aio_resilience.idempotency)."""
    permission = retry_permission(method)
    if permission is RetryPermission.NEVER:
        return "off: no idempotency declared"
    does = f"up to {attempts} attempts"
    if permission is RetryPermission.WITH_KEY:
        does = f"only with {KEY_FIELD} set: {does}"
    if _server_streaming(method):
        does += ", before the first message only"
    return does


def _server_streaming(method: str) -> bool:
    service_name, _, method_name = method.lstrip("/").partition("/")
    try:
        service = descriptor_pool.Default().FindServiceByName(service_name)
    except KeyError:
        return False
    found = service.methods_by_name.get(method_name)
    return bool(found is not None and found.server_streaming)


def _as_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_json(v) for v in value]
    return value


def _flat(options: Mapping[str, Any], prefix: str = "") -> str:
    parts: list[str] = []
    for key, value in options.items():
        if isinstance(value, Mapping):
            parts.append(_flat(value, f"{prefix}{key}."))
        else:
            parts.append(f"{prefix}{key}={value}")
    return " ".join(p for p in parts if p)


def _method_lines(methods: Mapping[str, str]) -> list[str]:
    """One line per method, or one for all when every method is treated alike."""
    if not methods:
        return []
    if len(set(methods.values())) == 1 and len(methods) > 1:
        return [f"    every method ({len(methods)}): {next(iter(methods.values()))}"]
    return [f"    {method}: {does}" for method, does in methods.items()]
