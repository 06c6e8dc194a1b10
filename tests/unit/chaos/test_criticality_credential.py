"""The criticality scenario calls recommendation's replicas as a hop inside the mesh does: with
the mesh's internal token from mesh.json on every call (the replicas refuse calls without it),
marked or not."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from grpc_resilience_mesh.chaos.scenarios.criticality import _backends, _send
from grpc_resilience_mesh.chaos.scenarios.params import CriticalityParams, Pool

TOKEN = "internal-token-of-this-run-0123456789"


class _Replica:
    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []

    async def Recommend(self, request: Any, **kwargs: Any) -> None:
        self.seen.append(dict(kwargs["metadata"]))


def _state(tmp_path: Path) -> Any:
    services = {
        "recommendation": {"listen": "127.0.0.1:1"},
        "recommendation-2": {"listen": "127.0.0.1:2"},
        "profile": {"listen": "127.0.0.1:3"},
    }
    state = {"services": services, "internal_token": TOKEN}
    (tmp_path / "mesh.json").write_text(json.dumps(state))
    return SimpleNamespace(target=SimpleNamespace(state_dir=tmp_path))


@pytest.mark.parametrize("mark", [True, False])
async def test_every_call_carries_the_internal_token(tmp_path: Path, mark: bool) -> None:
    addresses, credential = _backends(_state(tmp_path))
    assert addresses == ["127.0.0.1:1", "127.0.0.1:2"]
    replica = _Replica()
    params = CriticalityParams(
        pool=Pool(workers=20, service_time_s=1.0),
        duration_s=0.2,
        warmup_s=0.0,
        critical_share=0.25,
        deadline_s=0.2,
        mark=mark,
    )
    sent = await _send([replica], params, 100.0, credential)
    assert len(sent) == len(replica.seen) == 20
    assert {md.get("authorization") for md in replica.seen} == {f"Bearer {TOKEN}"}
