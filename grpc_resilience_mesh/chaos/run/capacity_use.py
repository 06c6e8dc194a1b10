"""Which RPC mixes an experiment has the mesh's capacity probed for (the runner's closed-loop
probe, up to CALIBRATION_S each): the runner and the plan ask the same question here.

In its full form an experiment's report prints the capacity of its load's mix (the run line), so
every mix of it is probed. The demo's short form probes a mix only where a figure of the probe is
read: a load whose rate is a multiple of the capacity (`rate_x_capacity`, the steady state's,
a variant's or the recovery's), or an expectation or a column naming a capacity metric. Elsewhere
its run line shows what an earlier experiment of the run measured for that mix, or says the
capacity was not probed (issue 46: about 6 s of the demo's probes that no
bound read).
"""

from __future__ import annotations

from grpc_resilience_mesh.chaos.experiment.model import Experiment, LoadSpec

Mix = tuple[str, ...]
CAPACITY_METRICS = frozenset(
    {"capacity_per_s", "capacity_p99_ms", "goodput_vs_capacity", "ok_p99_vs_capacity"}
)
"""The fault phase's metrics made of the probe's figures (run/measure.py's fault_metrics)."""


def all_mixes(exp: Experiment) -> set[Mix]:
    """Every mix the experiment's gateway loads send: its load's and each variant's."""
    return {tuple(exp.load.rpc)} | {tuple(exp.load_for(v).rpc) for v in exp.variants}


def _loads(exp: Experiment) -> list[LoadSpec]:
    """Every load the runner sends for `exp` (the probes to close breakers set no rate)."""
    loads = [exp.steady_state.load, *(exp.load_for(v) for v in exp.variants)]
    if exp.recovery is not None and exp.recovery.load is not None:
        loads.append(exp.recovery.load)
    return loads


def read_mixes(exp: Experiment) -> set[Mix]:
    """The mixes whose probed capacity a load's rate, an expectation or a column reads."""
    mixes: set[Mix] = {
        tuple(spec.rpc)
        for spec in _loads(exp)
        if spec.rate_x_capacity is not None and spec.rate_per_s is None
    }
    named = {e.metric for e in exp.expectations} | set(exp.columns)
    if named & CAPACITY_METRICS:
        mixes |= {tuple(exp.load_for(v).rpc) for v in exp.variants}
    return mixes


def probed_mixes(exp: Experiment) -> set[Mix]:
    """The mixes the runner probes for `exp` (none for a scenario: it sets its own pace)."""
    if exp.scenario is not None:
        return set()
    return read_mixes(exp) if exp.demo_form else all_mixes(exp)
