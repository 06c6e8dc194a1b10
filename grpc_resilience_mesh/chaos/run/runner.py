"""The experiment runner: steady state -> inject -> load -> measure -> remove -> verify.

For each variant: reset every fault, apply the variant's policy, check steady state, start
the faults on their schedule and the bounded load at the same moment, collect per-request
outcomes and the services' counters, remove the faults, optionally measure a recovery
phase, check steady state again. Faults are removed on every exit path: normal end, failed
steady state, the abort condition, an exception in the load, and Ctrl-C.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

from grpc_resilience_mesh.chaos.experiment.model import Experiment, Fault, LoadSpec, Variant
from grpc_resilience_mesh.chaos.experiment.variant_policy import materialise_policy, policy_text
from grpc_resilience_mesh.chaos.registry import CHECKS, CheckContext
from grpc_resilience_mesh.chaos.results import (
    ExperimentResult,
    PhaseResult,
    SteadyStateFailed,
    VariantResult,
)
from grpc_resilience_mesh.chaos.run.capacity_use import probed_mixes
from grpc_resilience_mesh.chaos.run.faults import Injector
from grpc_resilience_mesh.chaos.run.kill_switch import KillSwitch
from grpc_resilience_mesh.chaos.run.measure import (
    AttemptsWhileOn,
    CpuTally,
    check_probes,
    counter_metrics,
    evaluate,
    fault_exposure,
    fault_metrics,
    load_metrics,
    vs_steady,
)
from grpc_resilience_mesh.chaos.run.plan import CALIBRATION_S
from grpc_resilience_mesh.chaos.run.policy_swap import (
    NoAdminAddress,
    PolicySwapFailed,
    swap_every_service,
)
from grpc_resilience_mesh.chaos.run.progress_file import ProgressFile
from grpc_resilience_mesh.chaos.run.return_watch import load_until_back
from grpc_resilience_mesh.chaos.run.scenario_run import run_scenario, run_side_by_side, side_by_side
from grpc_resilience_mesh.chaos.run.target import Target
from grpc_resilience_mesh.chaos.run.xds_wiring import wire_xds
from grpc_resilience_mesh.client.counters import scrape
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient
from grpc_resilience_mesh.loadgen.in_process import LoadGenerator, LoadResult, Outcome, plan_for
from grpc_resilience_mesh.loadgen.procstat import cpu_by_name

log = logging.getLogger("chaos.runner")

Progress = Callable[[str, int, int], None]
"""progress(label, done, total): called as requests complete."""


class Runner:
    """Runs experiments against one target, reporting progress as it goes."""

    def __init__(self, target: Target, progress: Progress | None = None) -> None:
        self.target = target
        shown = progress or (lambda label, done, total: None)
        self.progress_file = ProgressFile(target.state_dir)  # the console reads it

        def report(label: str, done: int, total: int) -> None:
            shown(label, done, total)
            self.progress_file.update(label, done, total)

        self.progress: Progress = report
        token = target.admin_token
        client = ToxiproxyClient(target.toxiproxy, token=token) if target.toxiproxy else None
        self.injector = Injector(
            client, target.admin, target.mesh, admin_token=token, xds_admin=target.plane_admin
        )
        self._swapped = False
        self._start_policy = target.policy or (target.mesh.policy if target.mesh else None)
        self.capacity: dict[tuple[str, ...], dict[str, float]] = {}
        """Capacity measured once per run (per RPC mix), whatever the experiments or repeats;
        again for an experiment with `capacity_per_experiment` (its mixes: `remeasured`)."""
        self.remeasured: set[tuple[str, ...]] = set()
        self.cpu = CpuTally()
        """The load generator's and the mesh's CPU over every load of the run."""
        self.generator = LoadGenerator()
        """One load generator process for the whole run (close() ends it)."""

    async def close(self) -> None:
        await self.generator.close()

    async def _load(
        self,
        label: str,
        spec: LoadSpec,
        stop: asyncio.Event | None = None,
        on_outcome: Callable[[Outcome], None] | None = None,
    ) -> LoadResult:
        if spec.rate_x_capacity is not None and spec.rate_per_s is None:
            capacity = await self.calibrate(spec)
            rate = max(1.0, capacity["capacity_per_s"] * spec.rate_x_capacity)
            spec = spec.model_copy(update={"rate_per_s": rate})
        total = spec.requests * spec.repeat
        done = 0

        def tick(outcome: Outcome) -> None:
            nonlocal done
            done += 1
            self.progress_file.count(label, outcome.code)
            self.progress(label, done, total)
            if on_outcome is not None:
                on_outcome(outcome)

        merged = LoadResult()
        merged.offered_per_s = spec.rate_per_s
        pids = self.target.mesh_pids()
        for _ in range(spec.repeat):
            plan = plan_for(
                self.target.gateway,
                spec.requests,
                spec.rpc,
                concurrency=spec.concurrency,
                timeout_s=spec.deadline_s,
                think_s=spec.think_s,
                rate_per_s=spec.rate_per_s,
                max_duration_s=spec.max_duration_s,
                api_key=self.target.api_key,
                client_retries=spec.client_retries,
            )
            before = cpu_by_name(pids) if pids else None
            part = await self.generator.run(plan, tick, stop)
            after = cpu_by_name(pids) if pids else None
            used = (
                None
                if before is None or after is None
                else {name: after[name] - before[name] for name in before}
            )
            if pids is None or used is not None:  # a restarted service: skip this load
                mesh_cpu = None if used is None else sum(used.values())
                self.cpu.add(part.generator_cpu_s, mesh_cpu, len(part.outcomes))
            merged.add_cpu(part.generator_cpu_s, used)
            merged.outcomes.extend(part.outcomes)
            merged.elapsed_s += part.elapsed_s
            if stop is not None and stop.is_set():
                break
        return merged

    async def calibrate(self, spec: LoadSpec, exp: Experiment | None = None) -> dict[str, float]:
        """The mesh's capacity for `spec`'s RPC mix: closed-loop goodput at
        `capacity_concurrency` with no think time (for at most CALIBRATION_S), measured the
        first time this run needs that mix and kept for every later experiment, variant and
        repeat (`capacity_per_experiment`: measured again first, `forget_capacity`). For an
        `exp` that reads no figure of it (capacity_use.py): what the run has, or nothing."""
        key = tuple(spec.rpc)
        if exp is not None and key not in probed_mixes(exp):
            return self.capacity.get(key, {})
        if key not in self.capacity:
            probe = LoadSpec(
                rpc=spec.rpc,
                requests=spec.capacity_requests,
                concurrency=spec.capacity_concurrency,
                deadline_s=spec.deadline_s,
                max_duration_s=CALIBRATION_S,
            )
            when = "for this experiment" if key in self.remeasured else "once per run"
            metrics = load_metrics(await self._load(f"measuring capacity ({when})", probe))
            self.capacity[key] = {
                "capacity_per_s": metrics["goodput_per_s"],
                "capacity_p99_ms": metrics["p99_ms"],
            }
        return self.capacity[key]

    def forget_capacity(self, exp: Experiment) -> None:
        """Drops what was measured for `exp`'s RPC mixes, so that `calibrate` measures them
        now: its ratios are to a capacity of the same minute (the machine's speed moves)."""
        for key in probed_mixes(exp):
            self.capacity.pop(key, None)
            self.remeasured.add(key)

    async def _steady(self, exp: Experiment, label: str) -> dict[str, float]:
        metrics = load_metrics(await self._load(label, exp.steady_state.load))
        failures = check_probes(metrics, exp.steady_state.probes)
        if failures:
            raise SteadyStateFailed(f"{label}: " + "; ".join(failures))
        return metrics

    async def _fault_phase(self, exp: Experiment, variant: Variant) -> PhaseResult:
        spec = exp.load_for(variant)
        capacity = await self.calibrate(spec, exp)
        kill = KillSwitch(exp.abort, asyncio.Event())
        before = await scrape(self.target.metrics)
        self.injector.timeline = []
        faults = exp.faults_for(variant)
        while_on = AttemptsWhileOn(faults, lambda: scrape(self.target.metrics))
        load = await self._load_under(faults, f"{variant.name}: under fault", spec, while_on, kill)
        aborted = kill.over and kill.stop.is_set() and len(load.outcomes) < spec.requests
        after = await scrape(self.target.metrics)
        while_on.close(after)
        counters = after - before
        metrics = fault_metrics(load, counters, exp, capacity, await self.target.settle())
        if aborted:
            metrics["aborted"] = 1.0
        return PhaseResult(load, counters, metrics, **self.injector.recorded())

    async def _load_under(
        self,
        faults: list[Fault],
        label: str,
        spec: LoadSpec,
        while_on: AttemptsWhileOn,
        kill: KillSwitch,
    ) -> LoadResult:
        """The load, with the faults on their schedule from the same moment and the kill switch
        watching; every fault is removed on every way out."""
        lever = kill.lever_watch()  # `mesh chaos stop`: LeverPulled now, or once rolled back
        self.injector.observer = while_on.observe
        ready = asyncio.Event()
        schedule = asyncio.create_task(self.injector.run_schedule(faults, kill.stop, ready))
        try:
            await ready.wait()
            if schedule.done():
                schedule.result()  # a fault that could not be applied fails the variant
            return await load_until_back(
                self._load, label, spec, kill.stop, kill.watch, self.injector
            )
        finally:
            kill.stop.set()
            try:
                await schedule
            finally:
                self.injector.observer = None
                await self.injector.reset_all()
                await lever

    async def _probe_until_closed(self, label: str, spec: LoadSpec, most: int = 20) -> int:
        """Requests sent one at a time until no service reports a breaker open or half-open
        (at most `most`): how many probes it took the breakers to close."""
        one = spec.model_copy(update={"requests": 1, "concurrency": 1, "repeat": 1})
        one = one.model_copy(update={"rate_per_s": None, "rate_x_capacity": None})
        sent = 0
        while sent < most and self.target.metrics:
            snap = await scrape(self.target.metrics)
            if not snap.total_nonzero("mesh_breaker_state"):
                break
            await self._load(f"{label}: probing the half-open breakers", one)
            sent += 1
        return sent

    async def _set_policy(self, source: str) -> None:
        """Swap every service's policy in place through its loopback PolicyAdmin: fresh
        breakers, budgets and bulkheads without a restart, on every service or on none
        (grpc_resilience_mesh.chaos.run.policy_swap). PolicySwapFailed says why not."""
        await swap_every_service(self.target.admin, self.target.admin_token, policy_text(source))

    async def prepare_variant(
        self, name: str, path: Path, exp: Experiment, variant: Variant
    ) -> VariantResult:
        """Faults reset and the variant's policy in place: its result so far, `skipped` or
        `error` set when it cannot run."""
        policy = materialise_policy(path, name, variant, self.target.state_dir / "policies")
        result = VariantResult(variant, policy)
        await self.injector.reset_all()
        result.skipped = await wire_xds(self.target.mesh, variant, policy)
        if result.skipped:
            return result
        try:
            await self._set_policy(policy)
        except (NoAdminAddress, PolicySwapFailed) as err:
            if self.target.mesh is not None:  # ours: a restart under the variant's policy
                log.warning("%s: policy swap failed (%s); restarting the mesh", variant.name, err)
                await asyncio.to_thread(self.target.mesh.restart_services, policy)
            elif isinstance(err, PolicySwapFailed):
                result.error = f"policy swap failed, no variant measured: {err}"
                return result
            elif variant.policy != "full" or variant.overrides:
                result.skipped = (
                    f"the target's policy cannot be changed in place ({err}: try --target "
                    "running); deploy it with MESH_POLICY and run this variant alone"
                )
                return result
        else:
            self._swapped = True
            if self.target.mesh is not None:
                self.target.mesh.record_policy(policy)
        return result

    async def run_variant(
        self, name: str, path: Path, exp: Experiment, variant: Variant
    ) -> VariantResult:
        result = await self.prepare_variant(name, path, exp, variant)
        if result.skipped or result.error:
            return result
        if exp.scenario is not None:
            try:
                return await run_scenario(self, exp, variant, result)
            finally:
                await self.injector.reset_all()
        result.steady_before = await self._steady(exp, f"{variant.name}: steady state before")
        fault = await self._fault_phase(exp, variant)
        result.phases["fault"] = fault
        fault.metrics.update(vs_steady(fault.metrics, result.steady_before))
        fault.metrics.update(fault_exposure(exp, variant, fault))
        ctx = CheckContext(self.target, exp, variant, fault)
        for check in exp.checks:
            fault.metrics.update(await CHECKS[check](ctx))
        if exp.recovery is not None:
            await asyncio.sleep(exp.recovery.wait_s)
            spec = exp.recovery.load or exp.load_for(variant)
            probes = None
            if exp.recovery.probe_until_closed:
                probes = await self._probe_until_closed(variant.name, spec)
            before = await scrape(self.target.metrics)
            load = await self._load(f"{variant.name}: recovery", spec)
            counters = await scrape(self.target.metrics) - before
            result.phases["recovery"] = PhaseResult(
                load, counters, {**load_metrics(load), **counter_metrics(counters, exp)}
            )
            if probes is not None:
                result.phases["recovery"].metrics["probes_to_close"] = float(probes)
            if self.target.metrics:
                after = await scrape(self.target.metrics)
                opened = [
                    v for v in after.gauge("mesh_breaker_state", "gateway").values() if v != 0
                ]
                result.phases["recovery"].metrics["breakers_not_closed"] = float(len(opened))
        result.steady_after = await self._steady_again(exp, variant)
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
        self.progress_file.experiment = name
        try:
            if exp.scenario is None:  # before this experiment's variants (on our mesh, the
                # policy of the last experiment's last variant, unless measuring again)
                await self.injector.reset_all()
                if exp.load.capacity_per_experiment:
                    await self._back_on_start_policy()
                    self.forget_capacity(exp)
                out.capacity = dict(await self.calibrate(exp.load, exp))
            together = side_by_side(exp)  # every variant at once (scenario_run.py)
            if together:
                out.variants, out.aborted = await run_side_by_side(self, name, path, exp)
            for variant in () if together else exp.variants:
                try:
                    out.variants.append(await self.run_variant(name, path, exp, variant))
                except SteadyStateFailed as err:
                    out.variants.append(VariantResult(variant, variant.policy, error=str(err)))
                    out.aborted = f"steady state failed: {err}"
                    break
                except Exception as err:
                    why = f"{type(err).__name__}: {err}"
                    out.variants.append(VariantResult(variant, variant.policy, error=why))
                    out.aborted = f"{variant.name} failed: {why}"
                    break
        finally:
            await self.injector.reset_all()
            await self._restore_policy()
            self.progress_file.finish()
        out.verdicts = evaluate(out)
        out.generator_share = self.cpu.share
        return out

    async def _back_on_start_policy(self) -> None:
        """Back to the policy this run began with, where a variant swapped it: a capacity
        measured again is measured as the first was (on our mesh the last variant stays, and
        a shedding one refused the probe's calls); a mesh we did not start, after its run."""
        if (policy := self._start_policy) is None or not self._swapped:
            return
        try:
            await self._set_policy(policy)
        except (NoAdminAddress, PolicySwapFailed, OSError) as err:
            log.error("could not put the mesh back on its policy %s: %s", policy, err)
            return
        if self.target.mesh is not None:
            self.target.mesh.record_policy(policy)
        self._swapped = False

    async def _restore_policy(self) -> None:
        """A mesh we did not start goes back to the policy it ran before the variants."""
        if self.target.mesh is None:
            await self._back_on_start_policy()
