"""The criticality scenario's open-loop sender: each kind of call is spread evenly over the
replicas, so neither replica gets more than its share of the critical calls."""

from __future__ import annotations

from collections import Counter
from typing import Any

from grpc_resilience_mesh.chaos.scenarios.criticality import _send
from grpc_resilience_mesh.chaos.scenarios.params import CriticalityParams, Pool


class _Replica:
    def __init__(self, name: str, seen: Counter[tuple[str, str]]) -> None:
        self._name, self._seen = name, seen

    async def Recommend(self, request: Any, **kwargs: Any) -> None:
        kind = dict(kwargs["metadata"]).get("resilience-criticality", "unmarked")
        self._seen[(self._name, kind)] += 1


async def test_each_kind_is_spread_evenly_over_the_replicas() -> None:
    seen: Counter[tuple[str, str]] = Counter()
    stubs = [_Replica("a", seen), _Replica("b", seen)]
    params = CriticalityParams(
        pool=Pool(workers=20, service_time_s=1.0),
        duration_s=0.2,
        warmup_s=0.0,
        critical_share=0.25,
        deadline_s=0.2,
        mark=True,
    )
    sent = await _send(stubs, params, rate=400.0)
    assert len(sent) == 80
    assert seen == {
        ("a", "CRITICAL"): 10,
        ("b", "CRITICAL"): 10,
        ("a", "SHEDDABLE"): 30,
        ("b", "SHEDDABLE"): 30,
    }
