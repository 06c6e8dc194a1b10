"""Application-level fault injection: a runtime-editable table and the interceptor applying it.

Start-up configuration comes from env `MESH_FAULTS` (a JSON list of objects with the fields of
mesh.v1.Fault) and `MESH_FAULT_SEED` (an int: same seed, same sequence of injected failures).

MESH_FAULTS stays JSON (YAML 1.1 would read `1e-3` as a string and `.5` differently from JSON),
parsed with the limits grpc_resilience_mesh.services.safe_yaml puts on YAML: at most 64 KiB, NaN /
Infinity / 1e999 refused, each fault a flat object of typed scalars (so nesting is refused at the
first level).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio

from grpc_aio_resilience import (
    Behaviour,
    Clock,
    EventBus,
    FaultInjected,
    InjectedFaultError,
    ServerLayer,
    StreamBehaviour,
    SystemClock,
    abort_with,
    responses,
)
from grpc_resilience_mesh.services import safe_yaml, settings
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.exempt import is_exempt
from grpc_resilience_mesh.services.faults.ranges import (
    MAX_AFTER_MESSAGES,
    MAX_DELAY_S,
    MAX_PUSHBACK_MS,
    MAX_SERVICE_TIME_FACTOR,
)

MAX_FAULTS_BYTES = safe_yaml.MAX_BYTES
_FIELDS = (
    "method",
    "error_rate",
    "code",
    "delay_s",
    "pushback_ms",
    "after_messages",
    "first_attempt_only",
    "service_time_factor",
)
FAULTS = settings.Var(
    "MESH_FAULTS", settings.text, "", "faults to inject from start-up: a JSON list of fault objects"
)
FAULT_SEED = settings.Var(
    "MESH_FAULT_SEED", settings.integer, None, "seeds the fault dice: the same faults each run"
)
PREVIOUS_ATTEMPTS_KEY = "grpc-previous-rpc-attempts"
"""gRFC A6: a retry carries the number of attempts before it (the stream interceptor sends it)."""


class FaultValidationError(ValueError):
    """A fault definition is invalid; `field` names the offending field."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field


@dataclass(frozen=True, slots=True)
class FaultSpec:
    """Faults for one method ("/pkg.Service/Method" or "*" for every non-exempt method)."""

    method: str
    error_rate: float = 0.0
    code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE
    delay_s: float = 0.0
    pushback_ms: int = -1
    """Sent as grpc-retry-pushback-ms on injected failures when >= 0."""
    after_messages: int = 0
    """Server-streaming methods: messages sent before the injected failure (unary: ignored)."""
    first_attempt_only: bool = False
    """Fault only attempts that are not retries (no grpc-previous-rpc-attempts above 0)."""
    service_time_factor: float = 1.0
    """Multiplies the service time of the service's declared worker pool (a slower database)
    for work that starts while this fault is set, whatever the method; 1: unchanged."""

    @classmethod
    def parse(
        cls,
        method: str,
        error_rate: float,
        code: str,
        delay_s: float,
        pushback_ms: int,
        after_messages: int = 0,
        first_attempt_only: bool = False,
        service_time_factor: float = 0.0,
    ) -> FaultSpec:
        """Validates raw values (from env or FaultAdmin), naming the field that is wrong."""
        if not method or not (method == "*" or method.startswith("/")) or len(method) > 256:
            raise FaultValidationError(
                "method", f"must be '*' or '/pkg.Service/Method', got {safe_yaml.short(method)!r}"
            )
        if not 0.0 <= error_rate <= 1.0:  # NaN fails every comparison
            raise FaultValidationError("error_rate", f"must be within 0..1, got {error_rate}")
        status = grpc.StatusCode.__members__.get((code or "UNAVAILABLE").upper())
        if status is None or status is grpc.StatusCode.OK:
            raise FaultValidationError(
                "code", f"not a gRPC error code name: {safe_yaml.short(code)!r}"
            )
        if not 0.0 <= delay_s <= MAX_DELAY_S:
            raise FaultValidationError(
                "delay_s", f"must be within 0..{MAX_DELAY_S:g} seconds, got {delay_s}"
            )
        if not -1 <= pushback_ms <= MAX_PUSHBACK_MS:
            raise FaultValidationError(
                "pushback_ms",
                f"must be within -1..{MAX_PUSHBACK_MS} (-1 = none), got {pushback_ms}",
            )
        if not 0 <= after_messages <= MAX_AFTER_MESSAGES:
            raise FaultValidationError(
                "after_messages",
                f"must be within 0..{MAX_AFTER_MESSAGES}, got {after_messages}",
            )
        return cls(
            method,
            float(error_rate),
            status,
            float(delay_s),
            int(pushback_ms),
            int(after_messages),
            bool(first_attempt_only),
            _factor(service_time_factor),
        )


def _factor(value: float) -> float:
    """A service_time_factor: 0 (unset, the proto's default) is 1, else within 1..100."""
    if value == 0.0:
        return 1.0
    if not 1.0 <= value <= MAX_SERVICE_TIME_FACTOR:
        raise FaultValidationError(
            "service_time_factor",
            f"must be 0 (none) or within 1..{MAX_SERVICE_TIME_FACTOR:g}, got {value}",
        )
    return float(value)


class FaultTable:
    """The faults in force, by method; edits swap whole dicts, so readers never see a half-edit."""

    def __init__(self, faults: Iterable[FaultSpec] = (), seed: int | None = None) -> None:
        self._faults: dict[str, FaultSpec] = {f.method: f for f in faults}
        self.rng = random.Random(seed)
        self._watchers: tuple[Callable[[], None], ...] = ()

    def watch(self, changed: Callable[[], None]) -> None:
        """`changed` runs after every edit (FaultInterceptor wraps anew on the next call)."""
        self._watchers = (*self._watchers, changed)

    def _changed(self) -> None:
        for changed in self._watchers:
            changed()

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> FaultTable:
        """The faults in MESH_FAULTS, seeded by MESH_FAULT_SEED; a ConfigError names either."""
        return cls(parse_faults(FAULTS.read(environ)), FAULT_SEED.read(environ))

    def set(self, spec: FaultSpec) -> None:
        self._faults = {**self._faults, spec.method: spec}
        self._changed()

    def clear(self, method: str = "") -> None:
        self._faults = {} if not method else {k: v for k, v in self._faults.items() if k != method}
        self._changed()

    def list(self) -> list[FaultSpec]:
        return sorted(self._faults.values(), key=lambda f: f.method)

    def service_time_factor(self) -> float:
        """The declared worker pool's slowdown: the largest factor of the faults set (1: none)."""
        return max((f.service_time_factor for f in self._faults.values()), default=1.0)

    def lookup(self, method: str) -> FaultSpec | None:
        faults = self._faults
        if not faults:
            return None
        return faults.get(method) or faults.get("*")


def parse_faults(text: str, var: str = "MESH_FAULTS") -> list[FaultSpec]:
    """A JSON list of fault objects; any problem is a ConfigError naming `var` and the field."""
    if not text.strip():
        return []
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FAULTS_BYTES:
        raise ConfigError(f"{var}: more than the {MAX_FAULTS_BYTES} bytes it may have")
    try:
        raw = json.loads(
            text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_short_int
        )
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{var}: not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except (ValueError, RecursionError) as exc:
        reason = "nesting too deep" if isinstance(exc, RecursionError) else exc
        raise ConfigError(f"{var}: {safe_yaml.short(reason, 100)}") from None
    if not isinstance(raw, list):
        raise ConfigError(f"{var}: must be a JSON list of fault objects")
    specs = []
    for n, item in enumerate(raw, 1):
        try:
            specs.append(_spec_from_json(item))
        except FaultValidationError as exc:
            raise ConfigError(f"{var}: {exc} (fault {n} of {len(raw)})") from None
    return specs


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a fault may have")


def _short_int(text: str) -> int:
    if len(text) > 20:
        raise ValueError(f"an integer of {len(text)} digits")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"a number out of range ({safe_yaml.short(text, 20)})")
    return value


def _spec_from_json(item: Any) -> FaultSpec:
    if not isinstance(item, dict):
        raise FaultValidationError("fault", f"must be an object, got {type(item).__name__}")
    unknown = sorted(str(k) for k in set(item) - set(_FIELDS))
    if unknown:
        names = ", ".join(safe_yaml.short(k) for k in unknown[:5])
        raise FaultValidationError("fault", f"unknown fields: {names}")
    return FaultSpec.parse(
        _string(item, "method", ""),
        _number(item, "error_rate", 0.0),
        _string(item, "code", "UNAVAILABLE"),
        _number(item, "delay_s", 0.0),
        _integer(item, "pushback_ms", -1),
        _integer(item, "after_messages", 0),
        _flag(item, "first_attempt_only"),
        _number(item, "service_time_factor", 0.0),
    )


def _string(item: dict[str, Any], field: str, default: str) -> str:
    value = item.get(field, default)
    if not isinstance(value, str):
        raise FaultValidationError(field, f"must be a string, got {type(value).__name__}")
    return value


def _number(item: dict[str, Any], field: str, default: float) -> float:
    value = item.get(field, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FaultValidationError(field, f"must be a number, got {type(value).__name__}")
    return float(value)


def _flag(item: dict[str, Any], field: str) -> bool:
    value = item.get(field, False)
    if not isinstance(value, bool):
        raise FaultValidationError(field, f"must be true or false, got {type(value).__name__}")
    return value


def _integer(item: dict[str, Any], field: str, default: int) -> int:
    value = item.get(field, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise FaultValidationError(field, f"must be an integer, got {type(value).__name__}")
    return value


class FaultInterceptor(ServerLayer):
    """Delays and fails calls as the FaultTable says. It wraps once per method, anew after each
    edit of the table (`FaultTable.watch`): an untouched method costs nothing per call, and a
    `first_attempt_only` fault reads each call's metadata when the call runs."""

    wraps_per_method = True

    def __init__(
        self, service: str, faults: FaultTable, bus: EventBus, clock: Clock | None = None
    ) -> None:
        self._service = service
        self._faults = faults
        self._bus = bus
        self._clock = clock or SystemClock()
        faults.watch(self.rewrapped)

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        method = handler_call_details.method
        spec = self._faults.lookup(method)
        if spec is None or handler is None or is_exempt(method):
            return handler
        if handler.unary_stream is not None:
            return handler._replace(
                unary_stream=self._wrap_stream(handler.unary_stream, method, spec)
            )
        if handler.unary_unary is None:
            return handler
        return handler._replace(unary_unary=self._wrap(handler.unary_unary, method, spec))

    def _wrap(self, inner: Behaviour, method: str, spec: FaultSpec) -> Behaviour:
        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
            if spec.first_attempt_only and _is_retry(context.invocation_metadata()):
                return await inner(request, context)
            if spec.delay_s > 0.0:
                await self._clock.sleep(spec.delay_s)
            if spec.error_rate > 0.0 and self._faults.rng.random() < spec.error_rate:
                self._bus.emit(FaultInjected(self._service, method, spec.code.name, spec.delay_s))
                pushback_s = spec.pushback_ms / 1000.0 if spec.pushback_ms >= 0 else None
                await abort_with(context, InjectedFaultError(method, spec.code, pushback_s))
            if spec.delay_s > 0.0:
                self._bus.emit(FaultInjected(self._service, method, "OK", spec.delay_s))
            return await inner(request, context)

        return behaviour

    def _wrap_stream(self, inner: StreamBehaviour, method: str, spec: FaultSpec) -> StreamBehaviour:
        """A failing stream sends `after_messages` messages (fewer if that is all it has), then
        fails as a failing unary call would."""

        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            untouched = spec.first_attempt_only and _is_retry(context.invocation_metadata())
            if spec.delay_s > 0.0 and not untouched:
                await self._clock.sleep(spec.delay_s)
            fails = (
                not untouched
                and spec.error_rate > 0.0
                and self._faults.rng.random() < spec.error_rate
            )
            sent = 0
            async with aclosing(responses(inner, request, context)) as messages:
                async for message in messages:
                    if fails and sent >= spec.after_messages:
                        break
                    yield message
                    sent += 1
            if fails:
                self._bus.emit(FaultInjected(self._service, method, spec.code.name, spec.delay_s))
                pushback_s = spec.pushback_ms / 1000.0 if spec.pushback_ms >= 0 else None
                await abort_with(context, InjectedFaultError(method, spec.code, pushback_s))
            elif spec.delay_s > 0.0 and not untouched:
                self._bus.emit(FaultInjected(self._service, method, "OK", spec.delay_s))

        return behaviour


def _is_retry(metadata: Iterable[tuple[str, Any]] | None) -> bool:
    for key, value in metadata or ():
        if key == PREVIOUS_ATTEMPTS_KEY:
            text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
            digits = text.strip()
            return digits.isascii() and digits.isdigit() and digits.strip("0") != ""
    return False
