"""The topology experiment file: load on any method, faults on any edge or service, the guard
that aborts a run, and the expectations that decide its verdict (see model.py for its
topology)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, Protocol

from pydantic import Field, field_validator, model_validator

from grpc_resilience_mesh.chaos.experiment.bounds import check_bounds
from grpc_resilience_mesh.chaos.experiment.grpc_names import STATUS_CODES, check_code
from grpc_resilience_mesh.chaos.experiment.naming import did_you_mean, shown
from grpc_resilience_mesh.chaos.experiment.toxic_rules import attribute_problems, check_toxic_type
from grpc_resilience_mesh.chaos.topology.schema import StrictModel


class Declared(Protocol):
    """What a fault needs of the service it names (model.py's ServiceSpec)."""

    @property
    def fault_admin(self) -> bool: ...


_METHOD = re.compile(r"/?[A-Za-z_][\w.]*/[A-Za-z_]\w*")
METRICS = (
    "requests",
    "ok",
    "errors",
    "error_rate",
    "ok_ratio",
    "p50_s",
    "p99_s",
    "goodput_per_s",
    "streamed_messages",
)
"""The figures of a load an expectation may bound; `code.<STATUS_NAME>` counts one code."""


def check_full_method(value: str) -> str:
    """`/pkg.Service/Method` (the leading slash optional), returned with it."""
    if not _METHOD.fullmatch(value):
        raise ValueError(f"method {shown(value)}: expected /package.Service/Method")
    return value if value.startswith("/") else "/" + value


class LoadSpec(StrictModel):
    """Bounded load on one method: `requests` calls within `max_duration_s`."""

    method: str
    service: str | None = Field(
        default=None, description="the callee of a client edge; needed when there are several"
    )
    request: dict[str, Any] = {}
    metadata: dict[str, str] = {}
    deadline_s: float = Field(default=1.0, gt=0, le=60)
    requests: int = Field(default=100, ge=1, le=100_000)
    max_duration_s: float = Field(default=30.0, gt=0, le=600)
    concurrency: int = Field(default=8, ge=1, le=512)
    rate_per_s: float | None = Field(default=None, gt=0, le=5000)
    descriptor_set: str | None = None
    protos: list[str] = Field(
        default=[], description=".proto files (relative to this file), compiled by grpcio-tools"
    )
    proto_path: list[str] = Field(
        default=[], description="their include folders; default: each proto's own folder"
    )

    @field_validator("method")
    @classmethod
    def _method(cls, value: str) -> str:
        return check_full_method(value)

    @model_validator(mode="after")
    def _one_source(self) -> LoadSpec:
        if self.descriptor_set is not None and self.protos:
            raise ValueError("give descriptor_set or protos, not both")
        if self.proto_path and not self.protos:
            raise ValueError("proto_path without protos: name the .proto files too")
        return self


class SteadyStateSpec(StrictModel):
    """The same load shape before any fault: it must be healthy for the faults to go in."""

    requests: int = Field(default=50, ge=1, le=20_000)
    max_error_rate: float = Field(default=0.01, ge=0, le=1)
    max_p99_s: float | None = Field(default=None, gt=0)


class AppRule(StrictModel):
    """An app-level fault the service's fault interceptor applies (it needs fault_admin)."""

    code: str | None = Field(default="UNAVAILABLE", description="null: the call is only delayed")
    delay_ms: int = Field(default=0, ge=0, le=60_000)
    rate: float = Field(default=1.0, ge=0, le=1)
    method: str = "*"
    header: dict[str, str] = {}

    @field_validator("code")
    @classmethod
    def _code(cls, value: str | None) -> str | None:
        return None if value is None else check_code(value)

    @field_validator("method")
    @classmethod
    def _method(cls, value: str) -> str:
        return value if value == "*" else check_full_method(value)


class FaultSpec(StrictModel):
    """A toxic on an `edge`'s proxy, or an `app` fault in a `service`."""

    edge: str | None = None
    toxic: str | None = None
    attributes: dict[str, int] = {}
    stream: Literal["upstream", "downstream"] = "downstream"
    toxicity: float = Field(default=1.0, ge=0, le=1)
    service: str | None = None
    app: AppRule | None = None

    @field_validator("toxic")
    @classmethod
    def _toxic(cls, value: str | None) -> str | None:
        return None if value is None else check_toxic_type(value)

    @model_validator(mode="after")
    def _one_kind(self) -> FaultSpec:
        if (self.edge is None) == (self.service is None):
            raise ValueError("give exactly one of edge (a toxic) or service (an app fault)")
        if self.edge is not None and self.toxic is None:
            raise ValueError(f"edge {self.edge}: name the toxic (latency, timeout, ...)")
        if self.service is not None and self.app is not None and self.app.code is None:
            if self.app.delay_ms == 0:
                raise ValueError(f"service {self.service}: an app fault needs a code or delay_ms")
        if self.service is not None and (self.app is None or self.toxic is not None):
            raise ValueError(f"service {self.service}: give app: {{code, rate, ...}}, no toxic")
        if self.toxic is not None:
            problems = attribute_problems(self.toxic, self.attributes)
            if problems:
                raise ValueError("; ".join(problems))
        return self

    @property
    def label(self) -> str:
        return f"{self.toxic} on {self.edge}" if self.edge else f"app fault in {self.service}"


class GuardModel(StrictModel):
    """The guard over the run's own outcomes (on for every topology run)."""

    window_s: float = Field(default=1.0, gt=0, le=60)
    check_every_s: float = Field(default=0.25, gt=0, le=0.25)
    min_requests: int = Field(default=10, ge=1, le=100_000)
    max_error_rate: float = Field(default=0.5, ge=0, le=1)
    max_p99_s: float | None = Field(default=None, gt=0)
    min_goodput_per_s: float | None = Field(default=None, ge=0)


class Expectation(StrictModel):
    """One figure of the load under faults, bounded by max and/or min."""

    metric: str
    max: float | None = None
    min: float | None = None
    why: str = ""

    @field_validator("metric")
    @classmethod
    def _metric(cls, value: str) -> str:
        if value.startswith("code."):
            code = value.removeprefix("code.")
            if code != "OK" and code not in STATUS_CODES:
                raise ValueError(
                    f"metric {shown(value)}: no status code {shown(code)}"
                    f"{did_you_mean(code, STATUS_CODES)}"
                )
        elif value not in METRICS:
            raise ValueError(
                f"unknown metric {shown(value)}{did_you_mean(value, METRICS)} "
                f"(known: {', '.join(METRICS)}, code.<STATUS_NAME>)"
            )
        return value

    @model_validator(mode="after")
    def _bounded(self) -> Expectation:
        if self.max is None and self.min is None:
            raise ValueError(f"{self.metric}: give max, min or both")
        check_bounds(self.min, self.max)
        return self


class TopologyExperiment(StrictModel):
    """A hypothesis about a user's topology, tested under load with faults and a guard."""

    title: str = Field(min_length=1, max_length=200)
    hypothesis: str = ""
    topology: str = Field(min_length=1, description="the topology file, relative to this one")
    load: LoadSpec
    steady_state: SteadyStateSpec = SteadyStateSpec()
    faults: list[FaultSpec] = Field(default=[], max_length=32)
    guard: GuardModel = GuardModel()
    expectations: list[Expectation] = Field(default=[], max_length=64)


def fault_problems(
    exp: TopologyExperiment, services: Mapping[str, Declared], edges: list[str]
) -> list[str]:
    """Faults naming an edge or service the topology lacks, or a service with no fault admin."""
    found = []
    for i, fault in enumerate(exp.faults):
        if fault.edge is not None and fault.edge not in edges:
            found.append(
                f"faults.{i}.edge: unknown edge {shown(fault.edge)}"
                f"{did_you_mean(fault.edge, edges)} (known: {', '.join(edges)})"
            )
        if fault.service is not None:
            spec = services.get(fault.service)
            if spec is None:
                found.append(
                    f"faults.{i}.service: undeclared service {shown(fault.service)}"
                    f"{did_you_mean(fault.service, list(services))}"
                )
            elif not spec.fault_admin:
                found.append(
                    f"faults.{i}.service: {fault.service} has no fault_admin: true in the "
                    "topology, so nothing applies an app fault there"
                )
    return found
