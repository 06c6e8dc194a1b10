"""A topology experiment as one Chaos Toolkit experiment, its providers this repo's extension
(integrations/chaosmesh, module `chaosgrpcmesh.topology`):

- steady-state-hypothesis: the experiment's steady-state load through the client's proxy
  (chaosgrpcmesh.topology.run_load, its output the figures `mesh chaos run` reports) within the
  steady state's bounds (chaosgrpcmesh.tolerances.within); and the expectations
  (chaosgrpcmesh.probes.measured against chaosgrpcmesh.tolerances.expectations_met), nothing due
  before the method, so a missed expectation makes the run `deviated`;
- method: the faults on (chaosgrpcmesh.topology.apply_faults: toxics on the declared edges, app
  faults, under a lease), the load under the guard and the lever, every fault off;
- rollbacks: every fault off (chaosgrpcmesh.topology.remove_faults: any toxic still listed on
  the topology's proxies, every app fault), played when the method stopped half-way.

Chaos Toolkit starts no processes, so the document runs against a topology held up by
`mesh topology up FILE` (chaos/topology/held.py), found through its state file; the
description says so.
"""

from __future__ import annotations

from typing import Any

from grpc_resilience_mesh.chaos.export.inert import inert
from grpc_resilience_mesh.chaos.topology.held import DEFAULT_STATE, STATE_VAR
from grpc_resilience_mesh.chaos.topology.model import LoadedExperiment

STATE_ENV = STATE_VAR.name
MODULE = "chaosgrpcmesh.topology"


def _python(module: str, func: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "python", "module": module, "func": func, "arguments": arguments}


def _activity(kind: str, name: str, provider: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": kind, "name": inert(name), "provider": provider, **more}


def _bounds(low: float | None, high: float | None) -> dict[str, float]:
    return {k: v for k, v in (("min", low), ("max", high)) if v is not None}


def _hypothesis(loaded: LoadedExperiment) -> dict[str, Any]:
    exp, path = loaded.experiment, str(loaded.path.resolve())
    steady = exp.steady_state
    bounds = {"error_rate": _bounds(None, steady.max_error_rate)}
    if steady.max_p99_s is not None:
        bounds["p99_s"] = _bounds(None, steady.max_p99_s)
    within = _python("chaosgrpcmesh.tolerances", "within", {"bounds": bounds})
    expectations = [
        {"phase": "fault", "metric": e.metric, **_bounds(e.min, e.max)} for e in exp.expectations
    ]
    met = _python("chaosgrpcmesh.tolerances", "expectations_met", {"expectations": expectations})
    load = _python(MODULE, "run_load", {"experiment": path, "phase": "steady"})
    return {
        "title": "the steady state holds; after the method, every expectation was met",
        "probes": [
            _activity(
                "probe",
                "steady-state load",
                load,
                tolerance={"type": "probe", "name": "steady-state bounds", "provider": within},
            ),
            _activity(
                "probe",
                "the expectations",
                _python("chaosgrpcmesh.probes", "measured", {}),
                tolerance={"type": "probe", "name": "expectations met", "provider": met},
            ),
        ],
    }


def _off(name: str) -> dict[str, Any]:
    return _activity("action", name, _python(MODULE, "remove_faults", {}))


def to_chaostoolkit_topology(loaded: LoadedExperiment) -> dict[str, Any]:
    """The experiment as one Chaos Toolkit experiment, run against `mesh topology up`."""
    exp, path = loaded.experiment, str(loaded.path.resolve())
    faults = [f.model_dump(mode="json", exclude_none=True) for f in exp.faults]
    labels = ", ".join(f.label for f in exp.faults) or "none"
    up = f"mesh topology up {loaded.topology_path}"
    return {
        "version": "1.0.0",
        "title": inert(f"{loaded.path.stem}: {exp.title}"),
        "description": inert(
            f"{exp.hypothesis} Needs the topology up first, in another terminal: `{up}` "
            f"(its state file: ${STATE_ENV}, default {DEFAULT_STATE}). Chaos Toolkit starts "
            "none of its services."
        ),
        "tags": ["grpc-resilience-mesh", "topology", inert(loaded.topology.name)],
        "configuration": {
            "topology_state": {"type": "env", "key": STATE_ENV, "default": str(DEFAULT_STATE)}
        },
        "extensions": [
            {
                "name": "grpc-resilience-mesh",
                "experiment": path,
                "topology": str(loaded.topology_path),
                "needs": up,
            }
        ],
        "steady-state-hypothesis": _hypothesis(loaded),
        "method": [
            _activity(
                "action",
                f"faults on: {labels}",
                _python(MODULE, "apply_faults", {"faults": faults}),
            ),
            _activity(
                "probe",
                "load under fault",
                _python(MODULE, "run_load", {"experiment": path, "phase": "fault"}),
            ),
            _off("faults off"),
        ],
        "rollbacks": [_off("every fault removed (toxics on every edge, app faults)")],
    }
