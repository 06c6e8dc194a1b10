"""The experiment model's base classes, and the fault kinds that need no more than them.

`SlowdownFault` is the trigger of a metastable failure: for a while, the service's declared
worker pool (a database, say) takes `factor` times its service time for every call that starts
work meanwhile. It goes through the service's FaultAdmin like an app fault (the fault table's
`service_time_factor`), so the runner's kill switch, which clears every app fault on every
exit path, removes it too.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from chaos.experiment.bounds import fault_times


class FrozenModel(BaseModel):
    """Every model of an experiment file: unknown keys refused, immutable once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)


UNCHECKED_FAULTS = "faults_unchecked"
"""Validation context key: take the faults as written (chaos/experiment/lenient.py validates
a file again so, to find its other errors, when its faults failed their checks)."""


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
