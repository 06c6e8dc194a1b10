"""A catalogue experiment as Chaos Toolkit experiments, one per variant.

Each is a plain Chaos Toolkit document (version 1.0.0) whose providers are all this repo's
extension (integrations/chaosmesh, module `chaosgrpcmesh`): its Toxiproxy actions take chaostoxi's
arguments but send the mesh's admin token, which chaostoxi cannot, and stop the run when a
fault cannot be applied:

- steady-state-hypothesis: the experiment's steady-state load (chaosgrpcmesh.probes.run_load, its
  output the metrics) with its probes as bounds (chaosgrpcmesh.tolerances.within); and the
  expectations (chaosgrpcmesh.probes.measured against chaosgrpcmesh.tolerances.expectations_met),
  nothing due before the method, so a missed expectation makes the run `deviated`;
- controls: the variant's policy swapped onto every service before the steady state
  (chaosgrpcmesh.control, calling chaosgrpcmesh.actions.swap_policy), as the runner swaps it first;
- method: the faults on (chaosgrpcmesh.toxiproxy create_toxic / disable_proxy,
  chaosgrpcmesh.actions set_app_fault), the load under fault, the faults off, then the recovery
  (a pause, the breakers probed one request at a time, the recovery load, the breakers' state);
- rollbacks: every fault removed (chaosgrpcmesh.toxiproxy and chaosgrpcmesh.actions.clear_faults),
  the policy put back (chaosgrpcmesh.actions.restore_policy).

Titles, the description, tags and activity names are written inert
(grpc_resilience_mesh/chaos/export/inert.py): Chaos Toolkit's reporting renders them as Markdown and
HTML.

What Chaos Toolkit cannot say as the runner does (a fault on a schedule within the load, a
kill, a slowdown, a rate set from the measured capacity, a variant under xDS, scenario
experiments) makes that variant NotExportable, with the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from grpc_resilience_mesh.chaos.experiment.metric_names import COUNTERS, LOAD, RECOVERY_ONLY, RPCS
from grpc_resilience_mesh.chaos.experiment.model import (
    AppFault,
    Experiment,
    LoadSpec,
    ProxyDownFault,
    ToxicFault,
    Variant,
)
from grpc_resilience_mesh.chaos.experiment.variant_policy import variant_policy
from grpc_resilience_mesh.chaos.export.inert import inert
from grpc_resilience_mesh.chaos.run.faults import describe, proxies_of
from grpc_resilience_mesh.services.policy.loading import preset_text

Activity = dict[str, Any]
STATE_ENV = "MESH_STATE_FILE"
TOXIPROXY_ACTIONS = "chaosgrpcmesh.toxiproxy"


MEASURED_BY_THE_EXTENSION = frozenset(
    (*LOAD, *COUNTERS, *RECOVERY_ONLY, "p50_vs_steady", "p95_vs_steady", "p99_vs_steady")
) | {f"{rpc}_{m}" for rpc in RPCS for m in ("ok_rate", "p95_ms", "p99_ms")}
"""What chaosgrpcmesh's probes measure (its load probe, counters and breaker probes); an
expectation on anything else (a check's figure, capacity, CPU) is listed as not checked."""


def measurable(metric: str) -> bool:
    return metric in MEASURED_BY_THE_EXTENSION or metric.startswith(("code.", "calls."))


class NotExportable(ValueError):
    """A variant Chaos Toolkit's model cannot express as the runner runs it; says why."""


def _python(module: str, func: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "python", "module": module, "func": func, "arguments": arguments}


def _activity(kind: str, name: str, provider: dict[str, Any], **more: Any) -> Activity:
    return {"type": kind, "name": inert(name), "provider": provider, **more}


def load_arguments(phase: str, spec: LoadSpec) -> dict[str, Any]:
    """chaosgrpcmesh.probes.run_load's arguments for `spec` (closed or open loop, no waves)."""
    if spec.rate_x_capacity is not None and spec.rate_per_s is None:
        raise NotExportable("its load's rate is a multiple of the capacity measured first")
    if spec.repeat > 1:
        raise NotExportable(f"its load runs in {spec.repeat} waves")
    fields = ("rpc", "requests", "concurrency", "deadline_s", "think_s", "rate_per_s")
    more = ("max_duration_s", "client_retries")
    return {"phase": phase, **spec.model_dump(include=set(fields + more))}


def _load(phase: str, title: str, spec: LoadSpec) -> Activity:
    return _activity(
        "probe", title, _python("chaosgrpcmesh.probes", "run_load", load_arguments(phase, spec))
    )


def _fault(index: int, fault: object, on: bool) -> list[Activity]:
    """Activities that put `fault` on (or take it off), one per proxy of an edge."""
    if isinstance(fault, ToxicFault):
        name = f"exp{index}_{fault.toxic}_{fault.stream}"
        if not on:
            return [
                _activity(
                    "action",
                    f"fault off: {describe(fault)} ({proxy})",
                    _python(
                        TOXIPROXY_ACTIONS,
                        "delete_toxic",
                        {"for_proxy": proxy, "toxic_name": name},
                    ),
                )
                for proxy in proxies_of(fault.edge)
            ]
        args: dict[str, Any] = {"toxic_name": name, "toxic_type": fault.toxic}
        args |= {"stream": fault.stream}
        args |= {"toxicity": fault.toxicity, "attributes": dict(fault.attributes)}
        return [
            _activity(
                "action",
                f"fault on: {describe(fault)} ({proxy})",
                _python(TOXIPROXY_ACTIONS, "create_toxic", {"for_proxy": proxy, **args}),
            )
            for proxy in proxies_of(fault.edge)
        ]
    if isinstance(fault, ProxyDownFault):
        if fault.down_s is not None:
            raise NotExportable("a proxy flaps down and up within the load")
        func = "disable_proxy" if on else "enable_proxy"
        return [
            _activity(
                "action",
                f"fault {'on' if on else 'off'}: {describe(fault)} ({proxy})",
                _python(TOXIPROXY_ACTIONS, func, {"proxy_name": proxy}),
            )
            for proxy in proxies_of(fault.edge)
        ]
    if isinstance(fault, AppFault):
        if not on:
            return [_clear(f"fault off: {describe(fault)}")]
        args = fault.model_dump(
            include={"service", "method", "error_rate", "code", "delay_s", "pushback_ms"}
        )
        args["first_attempt_only"] = fault.first_attempt_only
        provider = _python("chaosgrpcmesh.actions", "set_app_fault", args)
        return [_activity("action", f"fault on: {describe(fault)}", provider)]
    raise NotExportable(f"a {getattr(fault, 'type', '?')} fault has no Chaos Toolkit action here")


def _clear(title: str) -> Activity:
    return _activity("action", title, _python("chaosgrpcmesh.actions", "clear_faults", {}))


def policy_yaml(path: Path, variant: Variant) -> str:
    """The variant's whole policy document, as every service is sent it."""
    doc = variant_policy(path, variant)
    return preset_text(doc) if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False)


def _method(path: Path, exp: Experiment, variant: Variant) -> list[Activity]:
    faults = exp.faults_for(variant)
    for fault in faults:
        if getattr(fault, "start_s", 0.0) or getattr(fault, "stop_s", None) is not None:
            raise NotExportable(f"{describe(fault)} runs on a schedule within the load")
    method: list[Activity] = []
    for n, fault in enumerate(faults):
        method += _fault(n, fault, True)
    method.append(_load("fault", "load under fault", exp.load_for(variant)))
    for n, fault in enumerate(faults):
        method += _fault(n, fault, False)
    if exp.recovery is not None:
        method[-1]["pauses"] = {"after": exp.recovery.wait_s}
        if exp.recovery.probe_until_closed:
            probe = _python("chaosgrpcmesh.probes", "probe_until_closed", {"phase": "recovery"})
            method.append(_activity("probe", "probe the half-open breakers", probe))
        spec = exp.recovery.load or exp.load_for(variant)
        method.append(_load("recovery", "recovery load", spec))
        state = _python("chaosgrpcmesh.probes", "breaker_state", {"phase": "recovery"})
        method.append(_activity("probe", "the gateway's breakers after recovery", state))
    return method


def _hypothesis(exp: Experiment, variant: Variant) -> dict[str, Any]:
    bounds = {
        p.metric: {k: v for k, v in (("min", p.min), ("max", p.max)) if v is not None}
        for p in exp.steady_state.probes
    }
    within = _python("chaosgrpcmesh.tolerances", "within", {"bounds": bounds})
    expectations = [
        {
            "phase": e.phase,
            "metric": e.metric,
            **{k: v for k, v in (("min", e.min), ("max", e.max)) if v is not None},
        }
        for e in exp.expectations
        if e.variant == variant.name and measurable(e.metric)
    ]
    met = _python("chaosgrpcmesh.tolerances", "expectations_met", {"expectations": expectations})
    steady = _load("steady", "steady-state load", exp.steady_state.load)
    measured = _python("chaosgrpcmesh.probes", "measured", {})
    return {
        "title": "the steady state holds; after the method, every expectation was met",
        "probes": [
            {
                **steady,
                "tolerance": {"type": "probe", "name": "steady-state bounds", "provider": within},
            },
            _activity(
                "probe",
                "the expectations",
                measured,
                tolerance={"type": "probe", "name": "expectations met", "provider": met},
            ),
        ],
    }


def _rollbacks(exp: Experiment, variant: Variant) -> list[Activity]:
    out: list[Activity] = []
    for n, fault in enumerate(exp.faults_for(variant)):
        if isinstance(fault, (ToxicFault, ProxyDownFault)):
            out += _fault(n, fault, False)
    out.append(_clear("every fault removed (toxics, proxies, app faults)"))
    restore = _python("chaosgrpcmesh.actions", "restore_policy", {})
    out.append(_activity("action", "every service back on its policy", restore))
    return out


def to_chaostoolkit(path: Path, name: str, exp: Experiment, variant: Variant) -> dict[str, Any]:
    """One variant as a Chaos Toolkit experiment; NotExportable says why it cannot be."""
    if exp.scenario is not None:
        raise NotExportable(f"a scenario experiment ({exp.scenario}) is code, not a method")
    if variant.xds:
        raise NotExportable(
            "it runs under xDS (`xds: true`), on a mesh started with `mesh up --xds`, which the "
            "Chaos Toolkit extension cannot start"
        )
    return {
        "version": "1.0.0",
        "title": inert(f"{name} ({variant.name}): {exp.title}"),
        "description": inert(exp.hypothesis),
        "tags": ["grpc-resilience-mesh", inert(name), variant.name],
        "configuration": {
            "mesh_state": {"type": "env", "key": STATE_ENV, "default": "var/mesh.json"},
            "mesh_experiment": name,
        },
        "extensions": [
            {
                "name": "grpc-resilience-mesh",
                "experiment": name,
                "variant": variant.name,
                "not_checked": [
                    f"{e.phase}/{e.metric}: measured by `mesh chaos run` only"
                    for e in exp.expectations
                    if e.variant == variant.name and not measurable(e.metric)
                ],
            }
        ],
        "controls": [
            {
                "name": inert(
                    f"the variant's policy ({variant.policy}, its overrides) on every service"
                ),
                "provider": {
                    "type": "python",
                    "module": "chaosgrpcmesh.control",
                    "arguments": {"policy_yaml": policy_yaml(path, variant)},
                },
            }
        ],
        "steady-state-hypothesis": _hypothesis(exp, variant),
        "method": _method(path, exp, variant),
        "rollbacks": _rollbacks(exp, variant),
    }
