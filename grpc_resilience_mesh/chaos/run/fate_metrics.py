"""Each request's fate (grpc_aio_resilience.fates) counted per phase: the reports' fate column set
(`fate.<kind>`), and the run's check that the fates add up to the requests, one each."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from grpc_aio_resilience import KINDS, kind_of, seen_by_caller
from grpc_resilience_mesh.chaos.experiment.metric_names import FATE_METRICS
from grpc_resilience_mesh.chaos.results import ExperimentResult, Verdict
from grpc_resilience_mesh.loadgen.in_process import LoadResult, Outcome

UNACCOUNTED = "fates_unaccounted"
ONE_FATE_EACH = "each request has exactly one fate: the fate columns add up to the requests"


def fate_of(outcome: Outcome) -> str:
    """The outcome's fate; one the generator did not record is what its caller saw."""
    return outcome.fate or seen_by_caller(outcome.code, None, ",".join(outcome.degraded))


def fate_metrics(result: LoadResult) -> dict[str, float]:
    """Requests by fate kind; a fate of no known kind (a garbled trailer) counts in none."""
    kinds = Counter(kind_of(fate_of(o)) for o in result.outcomes)
    return {
        metric: float(kinds.get(kind, 0)) for metric, kind in zip(FATE_METRICS, KINDS, strict=True)
    }


def fates_unaccounted(metrics: Mapping[str, float]) -> float | None:
    """Requests without a fate of a known kind (None: a phase measured before fates)."""
    if "requests" not in metrics or FATE_METRICS[0] not in metrics:
        return None
    return metrics["requests"] - sum(metrics.get(m, 0.0) for m in FATE_METRICS)


def fate_verdicts(result: ExperimentResult) -> list[Verdict]:
    """A failed verdict for each phase whose fates do not add up to its requests."""
    verdicts = []
    for variant in result.variants:
        for name, phase in variant.phases.items():
            missing = fates_unaccounted(phase.metrics)
            if missing:
                verdicts.append(
                    Verdict(
                        variant.variant.name,
                        name,
                        UNACCOUNTED,
                        missing,
                        "<= 0",
                        False,
                        ONE_FATE_EACH,
                    )
                )
    return verdicts
