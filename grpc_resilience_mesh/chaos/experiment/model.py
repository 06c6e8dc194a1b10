"""The experiment file format: a YAML document validated into typed models.

An experiment says what "normal" looks like (steady state), what we believe (hypothesis),
what we break (faults), how we load the system (load), which policies we compare
(variants), and which numbers decide the verdict (expectations). Unknown keys and bad values
are rejected with the file, the key and the reason, before anything starts: the YAML goes
through the bounded loader, toxic attributes, edges, services and methods are checked against
the toxics and the topology. What needs more than one file (the names an experiment takes
from the registries, the metrics each phase measures, the variants' policies) is checked when
the experiment is loaded (grpc_resilience_mesh/chaos/experiment/loading.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from grpc_resilience_mesh.chaos.experiment.bounds import check_bounds, seconds, within_load
from grpc_resilience_mesh.chaos.experiment.fault_kinds import UNCHECKED_FAULTS as UNCHECKED_FAULTS
from grpc_resilience_mesh.chaos.experiment.fault_kinds import FrozenModel as _Model
from grpc_resilience_mesh.chaos.experiment.fault_kinds import SlowdownFault as SlowdownFault
from grpc_resilience_mesh.chaos.experiment.fault_kinds import TimedFault as _Timed
from grpc_resilience_mesh.chaos.experiment.fault_kinds import TracedExpectation, unchecked
from grpc_resilience_mesh.chaos.experiment.fault_kinds import XdsFault as XdsFault
from grpc_resilience_mesh.chaos.experiment.grpc_names import STATUS_CODES, check_method
from grpc_resilience_mesh.chaos.experiment.grpc_names import methods as methods
from grpc_resilience_mesh.chaos.experiment.naming import did_you_mean, shown
from grpc_resilience_mesh.chaos.experiment.sweep import Sweep, expand
from grpc_resilience_mesh.chaos.experiment.toxic_rules import (
    attribute_problems,
    check_edge,
    check_toxic_type,
)
from grpc_resilience_mesh.services import topology
from grpc_resilience_mesh.services.faults.ranges import MAX_AFTER_MESSAGES, MAX_PUSHBACK_MS

EXPERIMENTS_DIR = Path(__file__).parent.parent / "experiments"


class ExperimentError(ValueError):
    """An experiment file is missing or invalid; the message names the file, key and reason."""


class LoadSpec(_Model):
    """Bounded load through the gateway: `requests` calls, closed loop or at a fixed rate."""

    rpc: list[Literal["home", "checkout"]] = Field(default=["home"], min_length=1)
    requests: int = Field(default=100, ge=1, le=20_000)
    concurrency: int = Field(default=10, ge=1, le=512)
    think_s: float = Field(default=0.0, ge=0, le=10)
    rate_per_s: float | None = Field(
        default=None, gt=0, le=5000, description="open loop: start calls at this rate"
    )
    deadline_s: float = Field(default=2.0, gt=0, le=60)
    max_duration_s: float = Field(default=60.0, gt=0, le=600)
    repeat: int = Field(default=1, ge=1, le=10, description="run the load N times (waves)")
    client_retries: int = Field(
        default=0,
        ge=0,
        le=10,
        description="retry a refused call after its pushback (checkouts keep their key)",
    )
    rate_x_capacity: float | None = Field(
        default=None,
        gt=0,
        le=20,
        description="open loop at this multiple of the capacity measured first",
    )
    capacity_concurrency: int = Field(default=16, ge=1, le=512)
    capacity_requests: int = Field(default=1000, ge=10, le=20_000)
    capacity_per_experiment: bool = Field(
        default=False,
        description="measure the capacity again right before this experiment (its variants "
        "share it) rather than once per run: for bounds that are ratios to it, since this "
        "machine's speed moves by a quarter within minutes",
    )


class Probe(_Model):
    """A steady-state tolerance: `metric` of the probe load must stay within max/min."""

    metric: Literal["ok_rate", "error_rate", "degraded_rate", "p50_ms", "p95_ms", "p99_ms"]
    max: float | None = None
    min: float | None = None

    @model_validator(mode="after")
    def _finite(self) -> Probe:
        check_bounds(self.min, self.max)
        return self


class SteadyState(_Model):
    """Checked before the faults and after they are removed."""

    load: LoadSpec = Field(default_factory=lambda: LoadSpec(requests=30, concurrency=3))
    probes: list[Probe] = Field(default_factory=lambda: [Probe(metric="error_rate", max=0.0)])


class ToxicFault(_Timed):
    """A Toxiproxy toxic on one edge's proxy."""

    type: Literal["toxic"]
    edge: str
    toxic: Literal[
        "latency", "bandwidth", "slow_close", "timeout", "reset_peer", "slicer", "limit_data"
    ]
    stream: Literal["upstream", "downstream"] = "downstream"
    toxicity: float = Field(default=1.0, ge=0, le=1)
    attributes: dict[str, int] = {}

    @field_validator("toxic", mode="before")
    @classmethod
    def _toxic_type(cls, value: object, info: ValidationInfo) -> object:
        if isinstance(value, str) and not unchecked(info):
            check_toxic_type(value)
        return value

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> ToxicFault:
        if unchecked(info):
            return self
        check_edge(self.edge)
        found = attribute_problems(self.toxic, self.attributes)
        if found:
            raise ValueError("; ".join(found))
        return self


class ProxyDownFault(_Timed):
    """An edge's proxy disabled (connections refused), optionally flapping down/up."""

    type: Literal["proxy_down"]
    edge: str
    down_s: float | None = Field(default=None, gt=0, description="flap: time down per cycle")
    up_s: float | None = Field(default=None, gt=0, description="flap: time up per cycle")

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> ProxyDownFault:
        if unchecked(info):
            return self
        check_edge(self.edge)
        for name, value in (("down_s", self.down_s), ("up_s", self.up_s)):
            if value is not None:
                seconds(value, name)
        if (self.down_s is None) != (self.up_s is None):
            raise ValueError("down_s and up_s go together (a flapping proxy)")
        return self


class AppFault(_Timed):
    """Application-level gRPC errors at a rate, injected by a service's fault interceptor."""

    type: Literal["app_fault"]
    service: Literal["gateway", "profile", "recommendation", "payment"]
    method: str = Field(description="e.g. Recommend, or a full /mesh.v1.X/Y name, or *")
    error_rate: float = Field(default=1.0, ge=0, le=1)
    code: str = "UNAVAILABLE"
    delay_s: float = Field(default=0.0, ge=0, le=60)
    pushback_ms: int = Field(
        default=-1,
        ge=-1,
        le=MAX_PUSHBACK_MS,
        description="[-1, 600000]: -1 sends no trailer; the FaultAdmin's own range",
    )
    after_messages: int = Field(
        default=0,
        ge=0,
        le=MAX_AFTER_MESSAGES,
        description="a stream: items sent before the failure (the FaultAdmin's range)",
    )
    first_attempt_only: bool = Field(
        default=False, description="spare retries (attempts with grpc-previous-rpc-attempts)"
    )

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> AppFault:
        if unchecked(info):
            return self
        if self.code not in STATUS_CODES:
            raise ValueError(
                f"code {shown(self.code)} is not a gRPC status code name"
                f"{did_you_mean(self.code, STATUS_CODES)}"
            )
        check_method(self.service, self.method)
        return self

    @property
    def full_method(self) -> str:
        if self.method == "*" or self.method.startswith("/"):
            return self.method
        service = {
            "gateway": "Gateway",
            "profile": "ProfileService",
            "recommendation": "RecommendationService",
            "payment": "PaymentService",
        }[self.service]
        return f"/mesh.v1.{service}/{self.method}"


class KillFault(_Timed):
    """kill -9 one process of the mesh (a replica, e.g. profile-2) at start_s; started again at
    stop_s (on the same ports) and counted back when it serves. Needs a mesh this run started."""

    type: Literal["kill"]
    service: str

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> KillFault:
        if unchecked(info):
            return self
        names = [s.name for s in topology.INSTANCES]
        if self.service not in names:
            raise ValueError(
                f"service {shown(self.service)}: not a process of the mesh"
                f"{did_you_mean(self.service, names)} (known: {', '.join(names)})"
            )
        return self


Fault = Annotated[
    ToxicFault | ProxyDownFault | AppFault | KillFault | SlowdownFault | XdsFault,
    Field(discriminator="type"),
]


class Variant(_Model):
    """One policy to compare: a preset (or a YAML file) plus overrides merged over it."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    policy: str = "full"
    overrides: dict[str, Any] = {}
    load: dict[str, Any] = Field(default={}, description="fields of `load` to change")
    demo_load: dict[str, Any] = Field(
        default={},
        description="fields of `load` to change in the demo's short form only (`mesh demo`), "
        "over `load`; the file says why the variant's bounds still hold",
    )
    faults: list[Fault] | None = Field(default=None, description="replaces the faults")
    demo_faults: list[Fault] | None = Field(
        default=None, description="replaces the faults in the demo's short form only, as demo_load"
    )
    params: dict[str, Any] = Field(default={}, description="scenario parameters to change")
    xds: bool = Field(
        default=False,
        description="the gateway and recommendation dial xds:/// targets (mesh-xds, mesh up "
        "--xds) for this variant: the embedded mesh's services restart into it and out of it",
    )
    description: str = ""


class Expectation(TracedExpectation):
    """A number of one variant's report that decides the verdict (`traces:`: fault_kinds.py)."""

    variant: str
    metric: str
    phase: Literal["fault", "recovery"] = "fault"
    max: float | None = None
    min: float | None = None
    why: str = ""

    @model_validator(mode="after")
    def _bounded(self) -> Expectation:
        if self.max is None and self.min is None:
            raise ValueError("give max, min or both")
        check_bounds(self.min, self.max)
        return self


class Abort(_Model):
    """Kill switch: stop the load and remove every fault when error_rate stays above a bound."""

    error_rate_above: float = Field(default=1.0, ge=0, le=1)
    for_s: float = Field(default=30.0, description="how long the error rate stays above")

    @model_validator(mode="after")
    def _finite(self) -> Abort:
        seconds(self.for_s, "for_s", low=0.001)  # 0 would abort on the first call over the bound
        return self


class Recovery(_Model):
    """After the faults are removed: wait, then run this load and measure again."""

    wait_s: float = Field(default=0.0, ge=0, le=60)
    load: LoadSpec | None = None
    probe_until_closed: bool = Field(
        default=False,
        description="before the measured load, send one request at a time until no breaker "
        "on any service is open or half-open (at most 20), counted as probes_to_close: the "
        "measurement starts when the breakers have closed, not while half-open ones refuse "
        "the callers their probe quota leaves out",
    )


class ReferenceRow(_Model):
    """A row of the seed's measurements shown beside ours (free-form columns)."""

    variant: str
    phase: Literal["fault", "recovery"] = "fault"
    values: dict[str, str | int | float]


class Experiment(_Model):
    """One experiment file."""

    title: str = Field(min_length=1)
    hypothesis: str = Field(min_length=1)
    lesson: str = Field(default="", description="which seed lesson this checks")
    steady_state: SteadyState = Field(default_factory=SteadyState)
    faults: list[Fault] = []
    load: LoadSpec = Field(default_factory=LoadSpec)
    recovery: Recovery | None = None
    variants: list[Variant] = Field(min_length=1)
    expectations: list[Expectation] = []
    abort: Abort = Field(default_factory=Abort)
    reference: list[ReferenceRow] = []
    dependency: str = Field(
        default="recommendation", description="whose received calls the table counts"
    )
    dependency_method: str = Field(default="*", description="method name, or * for all")
    checks: list[str] = Field(
        default=[], description="named checks from grpc_resilience_mesh/chaos/scenarios/checks.py"
    )
    scenario: str | None = Field(
        default=None,
        description="a named scenario (grpc_resilience_mesh/chaos/registry.py) drives this "
        "experiment instead of gateway load; it returns the metrics the expectations read",
    )
    params: dict[str, Any] = Field(default={}, description="the scenario's parameters")
    expected_s: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        description="a scenario experiment's wall time on an idle 2-core machine, all variants "
        "(the ETA's first guess; a scenario sets its own pace, a gateway load's is computed; "
        "a demo subset's share is the variants it keeps)",
    )
    columns: list[str] = Field(
        default=[], description="metrics shown in the table (default: the gateway-load columns)"
    )
    sweep: Sweep | None = Field(default=None, description="variants x load points (sweep.py)")
    demo_variants: list[str] = Field(default=[], description="the demo runs these (all if empty)")
    _demo_form: bool = PrivateAttr(default=False)

    @model_validator(mode="before")
    @classmethod
    def _expand(cls, data: Any, info: ValidationInfo) -> Any:
        return expand(data, short=bool(info.context and info.context.get("short_sweep")))

    @model_validator(mode="after")
    def _form(self, info: ValidationInfo) -> Experiment:
        self._demo_form = bool(info.context and info.context.get("short_sweep"))
        return self

    @property
    def demo_form(self) -> bool:
        """Read in the demo's short form (`mesh demo`, `mesh chaos plan --demo`)."""
        return self._demo_form

    @model_validator(mode="after")
    def _names(self) -> Experiment:
        found = self._name_problems()
        if found:
            raise ValueError("; ".join(found))
        return self

    def _name_problems(self) -> list[str]:
        """Every variant, dependency and fault time that does not fit the rest of the file."""
        found = []
        names = [v.name for v in self.variants]
        if len(set(names)) != len(names):
            found.append(f"variants: duplicate names in {names}")
        wanted = [("expectations", e.variant) for e in self.expectations]
        for key, name in wanted + [("demo_variants", d) for d in self.demo_variants]:
            if name not in names:
                found.append(
                    f"{key}: unknown variant {shown(name)}"
                    f"{did_you_mean(name, names)} (have {', '.join(names)})"
                )
        services = [s.name for s in topology.SERVICES]
        if self.dependency not in services:
            found.append(
                f"dependency: unknown service {shown(self.dependency)}; known: "
                f"{', '.join(services)}"
            )
        else:
            try:
                check_method(self.dependency, self.dependency_method)
            except ValueError as err:
                found.append(f"dependency_{err}")
        for v in self.variants:
            try:
                spec = self.load_for(v)
                if self.scenario is None:  # a scenario sets its own pace
                    starts = [f.start_s for f in self.faults_for(v)]
                    within_load(starts, spec.max_duration_s * spec.repeat, v.name)
            except ValidationError as err:
                found.append(f"variants.{v.name}.load: {err.errors()[0]['msg']}")
            except ValueError as err:
                found.append(str(err))
        return found

    def faults_for(self, variant: Variant) -> list[Fault]:
        return list(self.faults if variant.faults is None else variant.faults)

    def load_for(self, variant: Variant) -> LoadSpec:
        return LoadSpec.model_validate({**self.load.model_dump(), **variant.load})
