"""The experiment model's base classes (an expectation's `traces:` rule among them), and the
fault kinds that need no more than them.

`SlowdownFault` is the trigger of a metastable failure: for a while, the service's declared
worker pool (a database, say) takes `factor` times its service time for every call that starts
work meanwhile. It goes through the service's FaultAdmin like an app fault (the fault table's
`service_time_factor`), so the runner's kill switch, which clears every app fault on every
exit path, removes it too.

`XdsFault` is gRFC A33's delay and abort, pushed by the mesh's xDS control plane to the
caller's own gRPC client: the third fault source beside Toxiproxy (L4) and the services'
fault interceptor.

An expectation checked on the run's spans: `traces:` names one rule of a small fixed set.

    - {variant: full, traces: {max_attempts_per_request: 3}, why: ...}
    - {variant: full, traces: breaker_open_then_fallback, why: ...}

Each rule is one mechanism seen in every trace of the fault phase
(grpc_resilience_mesh/chaos/scenarios/trace_rules.py says what breaks it). The expectation's
metric is the number of traces that broke the rule, `traces_broken.<rule>`, measured by the
`traces` check (so the experiment names it in `checks:`); its bound is `max: 0` unless given.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from grpc_resilience_mesh.chaos.experiment.bounds import fault_times
from grpc_resilience_mesh.chaos.experiment.grpc_names import check_code, check_method
from grpc_resilience_mesh.chaos.experiment.naming import did_you_mean, shown
from grpc_resilience_mesh.chaos.scenarios.trace_rule_names import (
    COUNTED_RULES,
    FLAG_RULES,
    METRIC_PREFIX,
    RULES,
)
from grpc_resilience_mesh.services import topology
from grpc_resilience_mesh.services.topology import Edge, xds_edges


class FrozenModel(BaseModel):
    """Every model of an experiment file: unknown keys refused, immutable once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)


UNCHECKED_FAULTS = "faults_unchecked"
"""Validation context key: take the faults as written
(grpc_resilience_mesh/chaos/experiment/lenient.py validates a file again so, to find its other
errors, when its faults failed their checks)."""


def unchecked(info: ValidationInfo) -> bool:
    return bool((info.context or {}).get(UNCHECKED_FAULTS))


class TimedFault(FrozenModel):
    """A fault's schedule, seconds after the load starts."""

    start_s: float = Field(default=0.0, description="after the load starts")
    stop_s: float | None = Field(default=None, description="null: when the load ends")

    @model_validator(mode="after")
    def _times(self, info: ValidationInfo) -> TimedFault:
        if unchecked(info):
            return self
        fault_times(self.start_s, self.stop_s)
        return self


class SlowdownFault(TimedFault):
    """The service's declared worker pool slower: each service time that starts while the
    fault is on is `factor` times the drawn one (every replica of the service). Only
    recommendation has a pool (policy `servers.recommendation.pool`)."""

    type: Literal["slowdown"]
    service: Literal["recommendation"] = "recommendation"
    factor: float = Field(gt=1, le=100, description="(1, 100]: the service time's multiple")

    @property
    def full_method(self) -> str:
        """The fault table's key: the pool serves every method, so '*'."""
        return "*"


def check_xds_edge(name: str) -> Edge:
    """An edge dialled through xDS under `mesh up --xds` (the gateway's and recommendation's),
    else ValueError with the close name and the known ones."""
    xds = {e.name: e for e in xds_edges()}
    if name in xds:
        return xds[name]
    if name in (e.name for e in topology.EDGES):
        raise ValueError(
            f"edge {shown(name)} is not dialled through xDS (under --xds only the gateway's "
            f"and recommendation's channels are: {', '.join(xds)})"
        )
    raise ValueError(
        f"unknown edge {shown(name)}{did_you_mean(name, list(xds))} (xDS edges: {', '.join(xds)})"
    )


class XdsFault(TimedFault):
    """gRFC A33 fault injection, pushed by the mesh's control plane: gRPC's own xDS client
    delays or aborts a share of the edge's calls (every call, or one method's route) before
    they leave the caller. Needs a variant under xDS (`xds: true`)."""

    type: Literal["xds"]
    edge: str = Field(description="an xDS edge, e.g. gateway_to_recommendation")
    method: str = Field(default="*", description="the dependency's method, e.g. Recommend, or *")
    abort_percent: float = Field(default=0.0, ge=0, le=100, description="[0, 100]")
    abort_code: str = "UNAVAILABLE"
    delay_percent: float = Field(default=0.0, ge=0, le=100, description="[0, 100]")
    delay_s: float = Field(default=0.0, ge=0, le=60, description="[0, 60]")

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> XdsFault:
        if unchecked(info):
            return self
        edge = check_xds_edge(self.edge)
        check_method(edge.dependency, self.method)
        if self.method.startswith("/"):
            raise ValueError(f"method {shown(self.method)}: give the short name, or *")
        check_code(self.abort_code)
        if self.abort_percent == 0 and self.delay_percent == 0:
            raise ValueError("an xds fault needs abort_percent or delay_percent above 0")
        if self.delay_percent > 0 and self.delay_s == 0:
            raise ValueError("delay_percent needs delay_s above 0")
        return self

    @property
    def route_method(self) -> str | None:
        """The method whose route the fault is on (None: every call of the edge)."""
        return None if self.method == "*" else self.method


class TraceRule(FrozenModel):
    """One rule and its number (the counted rules only)."""

    rule: str
    limit: int | None = Field(
        default=None,
        ge=1,
        le=9,
        description="[1, 9]: a policy's retry.max_attempts is at most 10, so no logical call "
        "makes more than 10 attempts and a bound of 10 or more could never be broken",
    )

    @property
    def metric(self) -> str:
        return METRIC_PREFIX + self.rule

    @property
    def shown(self) -> str:
        return self.rule if self.limit is None else f"{self.rule} <= {self.limit}"

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, data: Any) -> Any:
        """`name` or `{name: N}` as written in a file; `{rule, limit}` as the model dumps."""
        if isinstance(data, str):
            data = {"rule": data}
        elif isinstance(data, dict) and len(data) == 1 and "rule" not in data:
            [(name, limit)] = data.items()
            data = {"rule": name, "limit": limit}
        if not isinstance(data, dict):
            return data
        name = data.get("rule")
        if not isinstance(name, str) or name not in RULES:
            raise ValueError(
                f"unknown trace rule {shown(str(name))}{did_you_mean(str(name), RULES)} "
                f"(known: {', '.join(RULES)})"
            )
        if name in COUNTED_RULES and data.get("limit") is None:
            raise ValueError(f"{name} takes a number: {{{name}: N}}")
        if name in FLAG_RULES and data.get("limit") is not None:
            raise ValueError(f"{name} takes no number: write `traces: {name}`")
        return data


class TracedExpectation(FrozenModel):
    """The base of an expectation: `traces:` in place of `metric:`."""

    traces: TraceRule | None = Field(
        default=None, description="a rule checked on every trace of the fault phase"
    )

    @model_validator(mode="before")
    @classmethod
    def _trace_metric(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("traces") is None:
            return data
        rule = TraceRule.model_validate(data["traces"])
        if data.get("metric") not in (None, rule.metric):
            raise ValueError("give metric or traces, not both")
        if data.get("phase", "fault") != "fault":
            raise ValueError("traces: the rules are checked on the fault phase's traces")
        bounded = data.get("max") is not None or data.get("min") is not None
        return {**data, "metric": rule.metric, **({} if bounded else {"max": 0})}
