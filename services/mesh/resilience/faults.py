"""Application-level fault injection: a runtime-editable table and the interceptor applying it.

Start-up configuration comes from env `MESH_FAULTS` (a JSON list of objects with the fields of
mesh.v1.Fault) and `MESH_FAULT_SEED` (an int: same seed, same sequence of injected failures).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio

from mesh.resilience.clock import Clock, SystemClock
from mesh.resilience.errors import InjectedFaultError
from mesh.resilience.events import EventBus, FaultInjected
from mesh.resilience.inbound import Behaviour, HandlerLookup, abort_with, is_exempt


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

    @classmethod
    def parse(
        cls, method: str, error_rate: float, code: str, delay_s: float, pushback_ms: int
    ) -> FaultSpec:
        """Validates raw values (from env or FaultAdmin), naming the field that is wrong."""
        if not method or not (method == "*" or method.startswith("/")):
            raise FaultValidationError(
                "method", f"must be '*' or '/pkg.Service/Method', got {method!r}"
            )
        if not 0.0 <= error_rate <= 1.0:
            raise FaultValidationError("error_rate", f"must be within 0..1, got {error_rate}")
        status = grpc.StatusCode.__members__.get((code or "UNAVAILABLE").upper())
        if status is None or status is grpc.StatusCode.OK:
            raise FaultValidationError("code", f"not a gRPC error code name: {code!r}")
        if not delay_s >= 0.0:
            raise FaultValidationError("delay_s", f"must be >= 0, got {delay_s}")
        if pushback_ms < -1:
            raise FaultValidationError(
                "pushback_ms", f"must be >= -1 (-1 = none), got {pushback_ms}"
            )
        return cls(method, float(error_rate), status, float(delay_s), int(pushback_ms))


class FaultTable:
    """The faults in force, by method; edits swap whole dicts, so readers never see a half-edit."""

    def __init__(self, faults: Iterable[FaultSpec] = (), seed: int | None = None) -> None:
        self._faults: dict[str, FaultSpec] = {f.method: f for f in faults}
        self.rng = random.Random(seed)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> FaultTable:
        seed_text = environ.get("MESH_FAULT_SEED", "")
        try:
            seed = int(seed_text) if seed_text else None
        except ValueError as exc:
            raise ValueError(f"MESH_FAULT_SEED: not an integer: {seed_text!r}") from exc
        try:
            raw = json.loads(environ.get("MESH_FAULTS", "") or "[]")
            if not isinstance(raw, list):
                raise ValueError("must be a JSON list of fault objects")
            specs = [_spec_from_json(item) for item in raw]
        except (ValueError, TypeError) as exc:
            raise ValueError(f"MESH_FAULTS: {exc}") from exc
        return cls(specs, seed)

    def set(self, spec: FaultSpec) -> None:
        self._faults = {**self._faults, spec.method: spec}

    def clear(self, method: str = "") -> None:
        self._faults = {} if not method else {k: v for k, v in self._faults.items() if k != method}

    def list(self) -> list[FaultSpec]:
        return sorted(self._faults.values(), key=lambda f: f.method)

    def lookup(self, method: str) -> FaultSpec | None:
        faults = self._faults
        if not faults:
            return None
        return faults.get(method) or faults.get("*")


def _spec_from_json(item: Any) -> FaultSpec:
    if not isinstance(item, dict):
        raise ValueError(f"each fault must be an object, got {item!r}")
    unknown = set(item) - {"method", "error_rate", "code", "delay_s", "pushback_ms"}
    if unknown:
        raise ValueError(f"unknown fault fields {sorted(unknown)}")
    return FaultSpec.parse(
        str(item.get("method", "")),
        float(item.get("error_rate", 0.0)),
        str(item.get("code", "UNAVAILABLE")),
        float(item.get("delay_s", 0.0)),
        int(item.get("pushback_ms", -1)),
    )


class FaultInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Delays and fails calls as the FaultTable says; untouched methods cost one dict lookup."""

    def __init__(
        self, service: str, faults: FaultTable, bus: EventBus, clock: Clock | None = None
    ) -> None:
        self._service = service
        self._faults = faults
        self._bus = bus
        self._clock = clock or SystemClock()

    async def intercept_service(
        self, continuation: HandlerLookup, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        spec = self._faults.lookup(method)
        if spec is None or handler is None or handler.unary_unary is None or is_exempt(method):
            return handler
        return handler._replace(unary_unary=self._wrap(handler.unary_unary, method, spec))

    def _wrap(self, inner: Behaviour, method: str, spec: FaultSpec) -> Behaviour:
        async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
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
