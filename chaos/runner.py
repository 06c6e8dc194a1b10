"""The experiment runner: steady state -> inject -> load -> measure -> remove -> verify.

For each variant: reset every fault, apply the variant's policy, check steady state, start
the faults on their schedule and the bounded load at the same moment, collect per-request
outcomes and the services' counters, remove the faults, optionally measure a recovery
phase, check steady state again. Faults are removed on every exit path: normal end, failed
steady state, the abort condition, an exception in the load, and Ctrl-C.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import grpc
import yaml

from chaos.checks import CHECKS, CheckContext
from chaos.counters import Snapshot, scrape
from chaos.experiment import Experiment, LoadSpec, Probe, Variant
from chaos.faults import FaultEvent, Injector
from chaos.launcher import STATE_FILE, Mesh
from chaos.load import LoadResult, Outcome, percentile, run_load
from chaos.metric_names import counted
from chaos.toxiproxy.client import ToxiproxyClient
from chaos.variant_policy import variant_policy
from mesh.resilience.policy import PRESETS, PolicyError
from mesh.topology import SERVICES
from mesh.v1 import admin_pb2, admin_pb2_grpc

log = logging.getLogger("chaos.runner")
STATE_FILE_MAX_BYTES = 1 << 20

Progress = Callable[[str, int, int], None]
"""progress(label, done, total): called as requests complete."""


class SteadyStateFailed(RuntimeError):
    """The system was not in its steady state (before or after the faults)."""


@dataclass
class Target:
    """A running mesh: addresses of its gateway, Toxiproxy API, admin and metrics endpoints."""

    gateway: str
    toxiproxy: str | None
    admin: dict[str, str]
    metrics: dict[str, str]
    api_key: str | None = None
    mesh: Mesh | None = None
    state_dir: Path = Path("var")
    policy: str | None = None
    """The policy a mesh we did not start runs under: put back after the variants."""

    @classmethod
    def from_mesh(cls, mesh: Mesh) -> Target:
        state = mesh.state
        assert state is not None, "start the mesh first"
        return cls(
            gateway=state.gateway,
            toxiproxy=state.toxiproxy,
            admin={k: v["admin"] for k, v in state.services.items()},
            metrics={k: v["metrics"] for k, v in state.services.items()},
            api_key=state.api_key,
            mesh=mesh,
            state_dir=mesh.state_dir,
        )

    @classmethod
    def parse(cls, spec: str, environ: Mapping[str, str] | None = None) -> Target:
        """`running` (the mesh `mesh up` describes in $MESH_STATE_DIR or var/), a mesh.json
        or the folder holding one, or
        `toxiproxy=URL,gateway=HOST:PORT[,admin.SERVICE=HOST:PORT][,metrics.SERVICE=URL]`."""
        if spec == "running":
            env = os.environ if environ is None else environ
            return cls.from_state_file(Path(env.get("MESH_STATE_DIR") or "var") / STATE_FILE)
        if "=" not in spec:
            path = Path(spec)
            return cls.from_state_file(path / STATE_FILE if path.is_dir() else path)
        fields: dict[str, str] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            key, sep, value = part.partition("=")
            if not sep or not value:
                raise ValueError(f"--target: {part!r} is not KEY=VALUE")
            fields[key] = value
        if "gateway" not in fields:
            raise ValueError("--target needs gateway=HOST:PORT")
        known = {"gateway", "toxiproxy", "api_key"}
        for key in fields:
            if key not in known and not key.startswith(("admin.", "metrics.")):
                raise ValueError(f"--target: unknown key {key!r}")
        return cls(
            gateway=fields["gateway"],
            toxiproxy=fields.get("toxiproxy"),
            admin={k[6:]: v for k, v in fields.items() if k.startswith("admin.")},
            metrics={k[8:]: v for k, v in fields.items() if k.startswith("metrics.")},
            api_key=fields.get("api_key"),
        )

    @classmethod
    def from_state_file(cls, path: Path) -> Target:
        """The mesh a running `mesh up` describes in its mesh.json: every address and its key."""
        try:
            with path.open("rb") as fh:
                state = json.loads(fh.read(STATE_FILE_MAX_BYTES))
        except FileNotFoundError:
            raise ValueError(f"--target {path}: no such file; is `mesh up` running?") from None
        except OSError as err:
            raise ValueError(f"--target {path}: cannot read: {err.strerror or err}") from None
        except (ValueError, RecursionError):
            raise ValueError(f"--target {path}: not a mesh state file (not JSON)") from None
        services = state.get("services") if isinstance(state, dict) else None
        if not isinstance(services, dict) or not isinstance(state.get("gateway"), str):
            raise ValueError(f"--target {path}: not a mesh state file (no gateway, no services)")
        pids = state.get("pids")
        gateway_pid = pids.get("gateway") if isinstance(pids, dict) else None
        if isinstance(gateway_pid, int) and not _alive(gateway_pid):
            raise ValueError(f"--target {path}: that mesh is not running (gateway pid exited)")

        def addresses(kind: str) -> dict[str, str]:
            return {
                name: entry[kind]
                for name, entry in services.items()
                if isinstance(entry, dict) and isinstance(entry.get(kind), str)
            }

        def text(key: str) -> str | None:
            value = state.get(key)
            return value if isinstance(value, str) and value else None

        return cls(
            gateway=state["gateway"],
            toxiproxy=text("toxiproxy"),
            admin=addresses("admin"),
            metrics=addresses("metrics"),
            api_key=text("api_key"),
            state_dir=Path(text("state_dir") or path.parent),
            policy=text("policy"),
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class PhaseResult:
    """One measured load: its outcomes, the counters it moved, and the numbers derived."""

    load: LoadResult
    counters: Snapshot
    metrics: dict[str, float]
    timeline: list[FaultEvent] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    """Scenario experiments: detail rows for the report (e.g. attempt times)."""


@dataclass
class VariantResult:
    """Everything measured for one variant."""

    variant: Variant
    policy: str
    phases: dict[str, PhaseResult] = field(default_factory=dict)
    steady_before: dict[str, float] = field(default_factory=dict)
    steady_after: dict[str, float] = field(default_factory=dict)
    error: str = ""
    skipped: str = ""


@dataclass
class Verdict:
    """One expectation checked against what was measured."""

    variant: str
    phase: str
    metric: str
    measured: float | None
    bound: str
    passed: bool
    why: str = ""


@dataclass
class ExperimentResult:
    """An experiment's variants, verdicts, and whether its hypothesis held."""

    name: str
    path: Path
    experiment: Experiment
    variants: list[VariantResult] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    aborted: str = ""

    @property
    def held(self) -> bool:
        return (
            not self.aborted
            and all(v.passed for v in self.verdicts)
            and not any(v.error for v in self.variants)
        )


def load_metrics(result: LoadResult) -> dict[str, float]:
    outcomes = result.outcomes
    n = len(outcomes)
    ok = [o for o in outcomes if o.code == "OK"]
    lat = [o.latency_s * 1000 for o in outcomes]
    ok_lat = [o.latency_s * 1000 for o in ok]
    metrics = {
        "requests": float(n),
        "ok": float(len(ok)),
        "errors": float(n - len(ok)),
        "ok_rate": len(ok) / n if n else 0.0,
        "error_rate": (n - len(ok)) / n if n else 0.0,
        "degraded": float(sum(1 for o in ok if o.degraded)),
        "degraded_rate": sum(1 for o in ok if o.degraded) / n if n else 0.0,
        "personalised": float(sum(1 for o in ok if o.rpc == "home" and not o.degraded)),
        "total_ms": result.elapsed_s * 1000,
        "p50_ms": percentile(lat, 50),
        "p95_ms": percentile(lat, 95),
        "p99_ms": percentile(lat, 99),
        "max_ms": max(lat, default=0.0),
        "ok_p99_ms": percentile(ok_lat, 99),
        "min_ms": min(lat, default=0.0),
        "goodput_per_s": len(ok) / result.elapsed_s if result.elapsed_s else 0.0,
        "rejections_without_pushback": float(
            sum(1 for o in outcomes if o.code == "RESOURCE_EXHAUSTED" and o.pushback_ms is None)
        ),
    }
    for served_by in ("popular", "cached-popular", "omitted"):
        metrics[f"served_{served_by.replace('-', '_')}"] = float(
            sum(1 for o in ok if f"recommendations:{served_by}" in o.degraded)
        )
    for rpc in ("home", "checkout"):
        mine = [o for o in outcomes if o.rpc == rpc]
        if mine:
            good = [o for o in mine if o.code == "OK"]
            metrics[f"{rpc}_ok_rate"] = len(good) / len(mine)
            metrics[f"{rpc}_p99_ms"] = percentile([o.latency_s * 1000 for o in mine], 99)
    for code, count in result.codes().items():
        metrics[f"code.{code}"] = float(count)
    return metrics


def counter_metrics(snap: Snapshot, exp: Experiment) -> dict[str, float]:
    method = "*" if exp.dependency_method == "*" else exp.dependency_method
    full = method if method in ("*",) or method.startswith("/") else None
    calls = 0.0
    for (svc, name, labels), value in snap.values.items():
        if svc != exp.dependency or name != "mesh_server_calls_total":
            continue
        m = dict(labels).get("method", "")
        if full == "*" or (full and m == full) or (not full and m.endswith("/" + method)):
            calls += value
    per_method: dict[str, float] = {}
    for (svc, name, labels), value in snap.values.items():
        if svc == exp.dependency and name == "mesh_server_calls_total":
            short = dict(labels).get("method", "").rsplit("/", 1)[-1]
            per_method[f"calls.{short}"] = per_method.get(f"calls.{short}", 0.0) + value
    return {
        **per_method,
        "dependency_calls": calls,
        "dependency_calls_all": snap.total("mesh_server_calls_total", exp.dependency),
        "retries": snap.total("mesh_client_retries_total"),
        "breaker_rejections": snap.total("mesh_breaker_rejections_total"),
        "breaker_opened": snap.total("mesh_breaker_transitions_total", to_state="open"),
        "bulkhead_rejections": snap.total("mesh_bulkhead_rejections_total"),
        "fallbacks": snap.total("mesh_fallbacks_total"),
        "shed": snap.total("mesh_server_shed_total"),
        "pushbacks_honoured": snap.total("mesh_pushbacks_honoured_total"),
        "faults_injected": snap.total("mesh_faults_injected_total"),
    }


def check_probes(metrics: dict[str, float], probes: list[Probe]) -> list[str]:
    failures = []
    for p in probes:
        value = metrics[p.metric]
        if p.max is not None and value > p.max:
            failures.append(f"{p.metric} {value:.3f} > {p.max}")
        if p.min is not None and value < p.min:
            failures.append(f"{p.metric} {value:.3f} < {p.min}")
    return failures


def materialise_policy(exp_path: Path, exp_name: str, variant: Variant, out_dir: Path) -> str:
    """The variant's policy as a preset name or a file written to `out_dir`, validated."""
    try:
        doc = variant_policy(exp_path, variant)
    except PolicyError as err:
        raise PolicyError(f"{exp_path}: {err}") from None
    if isinstance(doc, str):
        return doc
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{exp_name}.{variant.name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def policy_text(source: str) -> str:
    """The YAML of a preset name or a policy file."""
    if source in PRESETS:
        return (resources.files("mesh") / "policies" / f"{source}.yaml").read_text()
    return Path(source).read_text()


class Runner:
    """Runs experiments against one target, reporting progress as it goes."""

    def __init__(self, target: Target, progress: Progress | None = None) -> None:
        self.target = target
        self.progress = progress or (lambda label, done, total: None)
        client = ToxiproxyClient(target.toxiproxy) if target.toxiproxy else None
        self.injector = Injector(client, target.admin)
        self._swapped = False

    async def _load(
        self,
        label: str,
        spec: LoadSpec,
        stop: asyncio.Event | None = None,
        on_outcome: Callable[[Outcome], None] | None = None,
    ) -> LoadResult:
        total = spec.requests * spec.repeat
        done = 0

        def tick(outcome: Outcome) -> None:
            nonlocal done
            done += 1
            self.progress(label, done, total)
            if on_outcome is not None:
                on_outcome(outcome)

        merged = LoadResult()
        for _ in range(spec.repeat):
            part = await run_load(
                self.target.gateway,
                requests=spec.requests,
                concurrency=spec.concurrency,
                rpc_mix=spec.rpc,
                timeout_s=spec.deadline_s,
                think_s=spec.think_s,
                rate_per_s=spec.rate_per_s,
                max_duration_s=spec.max_duration_s,
                api_key=self.target.api_key,
                on_outcome=tick,
                stop=stop,
                client_retries=spec.client_retries,
            )
            merged.outcomes.extend(part.outcomes)
            merged.elapsed_s += part.elapsed_s
        return merged

    async def _steady(self, exp: Experiment, label: str) -> dict[str, float]:
        metrics = load_metrics(await self._load(label, exp.steady_state.load))
        failures = check_probes(metrics, exp.steady_state.probes)
        if failures:
            raise SteadyStateFailed(f"{label}: " + "; ".join(failures))
        return metrics

    async def _capacity(self, variant: Variant, spec: LoadSpec) -> dict[str, float]:
        """Closed-loop throughput at `capacity_concurrency`: what the mesh sustains."""
        probe = LoadSpec(
            rpc=spec.rpc,
            requests=spec.capacity_requests,
            concurrency=spec.capacity_concurrency,
            deadline_s=spec.deadline_s,
        )
        metrics = load_metrics(await self._load(f"{variant.name}: measuring capacity", probe))
        return {"capacity_per_s": metrics["goodput_per_s"], "capacity_p99_ms": metrics["p99_ms"]}

    async def _fault_phase(self, exp: Experiment, variant: Variant) -> PhaseResult:
        spec = exp.load_for(variant)
        capacity: dict[str, float] = {}
        if spec.rate_x_capacity is not None:
            capacity = await self._capacity(variant, spec)
            spec = spec.model_copy(
                update={"rate_per_s": max(1.0, capacity["capacity_per_s"] * spec.rate_x_capacity)}
            )
        stop = asyncio.Event()
        window: deque[tuple[float, bool]] = deque()
        bad_since: list[float] = []

        def watch(outcome: Outcome) -> None:  # the kill switch's abort condition
            now = time.monotonic()
            window.append((now, outcome.code != "OK"))
            while window and now - window[0][0] > 1.0:
                window.popleft()
            rate = sum(bad for _, bad in window) / len(window)
            if rate > exp.abort.error_rate_above:
                bad_since.append(now) if not bad_since else None
                if now - bad_since[0] >= exp.abort.for_s:
                    stop.set()
            else:
                bad_since.clear()

        before = scrape(self.target.metrics)
        self.injector.timeline = []
        ready = asyncio.Event()
        schedule = asyncio.create_task(
            self.injector.run_schedule(exp.faults_for(variant), stop, ready)
        )
        try:
            await ready.wait()
            if schedule.done():
                schedule.result()  # a fault that could not be applied fails the variant
            load = await self._load(f"{variant.name}: under fault", spec, stop, watch)
        finally:
            stop.set()
            try:
                await schedule
            finally:
                await self.injector.reset_all()
        aborted = bool(bad_since) and stop.is_set() and len(load.outcomes) < spec.requests
        counters = scrape(self.target.metrics) - before
        settle_s = await self._settle()
        metrics = {
            **load_metrics(load),
            **counter_metrics(counters, exp),
            **capacity,
            "settle_s": settle_s,
        }
        if capacity:
            metrics["offered_per_s"] = spec.rate_per_s or 0.0
            metrics["goodput_vs_capacity"] = metrics["goodput_per_s"] / max(
                capacity["capacity_per_s"], 1e-9
            )
            metrics["ok_p99_vs_capacity"] = metrics["ok_p99_ms"] / max(
                capacity["capacity_p99_ms"], 1e-9
            )
        if aborted:
            metrics["aborted"] = 1.0
        return PhaseResult(load, counters, metrics, list(self.injector.timeline))

    async def _set_policy(self, source: str) -> bool:
        """Swap every service's policy in place through its loopback PolicyAdmin: fresh
        breakers, budgets and bulkheads without a restart. False when some service cannot
        (no admin address, or a change such as gRPC's own retries that needs a restart)."""
        services = {s.name for s in SERVICES}
        if not services <= set(self.target.admin):
            return False
        request = admin_pb2.SetPolicyRequest(yaml=policy_text(source))
        try:
            for service in sorted(services):
                async with grpc.aio.insecure_channel(self.target.admin[service]) as channel:
                    await admin_pb2_grpc.PolicyAdminStub(channel).SetPolicy(request, timeout=5)
        except grpc.aio.AioRpcError:
            return False
        return True

    async def _settle(self, limit_s: float = 15.0) -> float:
        """Wait until no service has a call in flight (the backlog of an overload drained)."""
        started = time.monotonic()
        while self.target.metrics and time.monotonic() - started < limit_s:
            snap = await asyncio.to_thread(scrape, self.target.metrics)
            if snap.total("mesh_server_in_flight") <= 0:
                break
            await asyncio.sleep(0.1)
        return time.monotonic() - started

    async def run_variant(
        self, name: str, path: Path, exp: Experiment, variant: Variant
    ) -> VariantResult:
        policy = materialise_policy(path, name, variant, self.target.state_dir / "policies")
        result = VariantResult(variant, policy)
        await self.injector.reset_all()
        if await self._set_policy(policy):
            self._swapped = True
            if self.target.mesh is not None:
                self.target.mesh.record_policy(policy)
        elif self.target.mesh is not None:
            await asyncio.to_thread(self.target.mesh.restart_services, policy)
        elif variant.policy != "full" or variant.overrides:
            result.skipped = (
                "the target's policy cannot be changed in place (no admin address for every "
                "service: try --target running; or a change that needs a restart); "
                "deploy it with MESH_POLICY and run this variant alone"
            )
            return result
        if exp.scenario is not None:
            return await self._run_scenario(exp, variant, result)
        result.steady_before = await self._steady(exp, f"{variant.name}: steady state before")
        fault = await self._fault_phase(exp, variant)
        result.phases["fault"] = fault
        for rpc in ("home", "checkout"):
            steady = result.steady_before.get(f"{rpc}_p99_ms")
            if steady and f"{rpc}_p99_ms" in fault.metrics:
                fault.metrics[f"{rpc}_p99_vs_steady"] = fault.metrics[f"{rpc}_p99_ms"] / steady
        ctx = CheckContext(self.target, exp, variant, fault)
        for check in exp.checks:
            fault.metrics.update(await CHECKS[check](ctx))
        if exp.recovery is not None:
            await asyncio.sleep(exp.recovery.wait_s)
            spec = exp.recovery.load or exp.load_for(variant)
            before = scrape(self.target.metrics)
            load = await self._load(f"{variant.name}: recovery", spec)
            counters = scrape(self.target.metrics) - before
            result.phases["recovery"] = PhaseResult(
                load, counters, {**load_metrics(load), **counter_metrics(counters, exp)}
            )
            if self.target.metrics:
                after = scrape(self.target.metrics)
                opened = [
                    v for v in after.gauge("mesh_breaker_state", "gateway").values() if v != 0
                ]
                result.phases["recovery"].metrics["breakers_not_closed"] = float(len(opened))
        result.steady_after = await self._steady_again(exp, variant)
        return result

    async def _run_scenario(
        self, exp: Experiment, variant: Variant, result: VariantResult
    ) -> VariantResult:
        from chaos.scenarios import SCENARIOS, ScenarioContext

        assert exp.scenario is not None
        params = {**exp.params, **variant.params}
        ctx = ScenarioContext(self.target, exp, variant, params, self.progress)
        try:
            outcome = await SCENARIOS[exp.scenario](ctx)
        finally:
            await self.injector.reset_all()
        phase = PhaseResult(LoadResult(), Snapshot(), dict(outcome.metrics))
        phase.rows = outcome.rows
        result.phases["fault"] = phase
        return result

    async def _steady_again(
        self, exp: Experiment, variant: Variant, within_s: float = 15.0
    ) -> dict[str, float]:
        """Steady state must come back once the faults are gone (open breakers close after
        their open time, backlogs drain): probe until it holds, for at most `within_s`."""
        started = time.monotonic()
        while True:
            try:
                metrics = await self._steady(exp, f"{variant.name}: steady state after")
            except SteadyStateFailed:
                if time.monotonic() - started > within_s:
                    raise
                await asyncio.sleep(1.0)
                continue
            metrics["back_after_s"] = round(time.monotonic() - started, 2)
            return metrics

    async def run(self, name: str, path: Path, exp: Experiment) -> ExperimentResult:
        out = ExperimentResult(name, path, exp)
        try:
            for variant in exp.variants:
                try:
                    out.variants.append(await self.run_variant(name, path, exp, variant))
                except SteadyStateFailed as err:
                    out.variants.append(VariantResult(variant, variant.policy, error=str(err)))
                    out.aborted = f"steady state failed: {err}"
                    break
                except Exception as err:
                    out.variants.append(
                        VariantResult(variant, variant.policy, error=f"{type(err).__name__}: {err}")
                    )
                    out.aborted = f"{variant.name} failed: {type(err).__name__}: {err}"
                    break
        finally:
            await self.injector.reset_all()
            await self._restore_policy()
        out.verdicts = evaluate(out)
        return out

    async def _restore_policy(self) -> None:
        """A mesh we did not start goes back to the policy it ran before the variants."""
        if not self._swapped or self.target.mesh is not None or self.target.policy is None:
            return
        try:
            restored = await self._set_policy(self.target.policy)
        except OSError:
            restored = False
        if restored:
            self._swapped = False
        else:
            log.error("could not put the target back on its policy %s", self.target.policy)


def evaluate(result: ExperimentResult) -> list[Verdict]:
    by_name = {v.variant.name: v for v in result.variants}
    verdicts = []
    for exp in result.experiment.expectations:
        bound = " and ".join(
            s
            for s in (
                f">= {exp.min:g}" if exp.min is not None else "",
                f"<= {exp.max:g}" if exp.max is not None else "",
            )
            if s
        )
        variant = by_name.get(exp.variant)
        phase = variant.phases.get(exp.phase) if variant else None
        value = phase.metrics.get(exp.metric) if phase else None
        if value is None and phase is not None and counted(exp.metric):
            value = 0.0  # a status never returned, a method never called: none, not n/a
        passed = (
            value is not None
            and (exp.min is None or value >= exp.min)
            and (exp.max is None or value <= exp.max)
        )
        verdicts.append(Verdict(exp.variant, exp.phase, exp.metric, value, bound, passed, exp.why))
    return verdicts
