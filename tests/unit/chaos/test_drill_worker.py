"""The jobs' test-only drills live with the experiments: only the drill worker obeys them, and
only when started with NOTIFY_DRILLS=1; the product's worker has no drill code at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grpc_resilience_mesh.chaos.scenarios.receipts import drill_worker, drills
from grpc_resilience_mesh.services.contracts.receipt_job import DRILL_KEY
from grpc_resilience_mesh.services.runtime.server import Runtime
from tests.support.runtimes import runtime_for

PRODUCT = Path(__file__).resolve().parents[3] / "grpc_resilience_mesh" / "services"


def notification_runtime(env: dict[str, str]) -> Runtime:
    addresses = {"REDIS_ADDR": "127.0.0.1:1", "SMTP_ADDR": "127.0.0.1:2"}
    return runtime_for("notification", {**addresses, **env})


@pytest.mark.parametrize(("flag", "obeys"), [("1", True), ("0", False)])
async def test_the_drill_worker_obeys_drills_only_with_notify_drills(
    monkeypatch: pytest.MonkeyPatch, flag: str, obeys: bool
) -> None:
    hooks: list[Any] = []

    async def fake_build(runtime: Runtime, before_send: Any = None) -> Any:
        hooks.append(before_send)
        return None

    monkeypatch.setattr(drill_worker, "build", fake_build)
    await drill_worker.build_drill_worker(notification_runtime({"NOTIFY_DRILLS": flag}))
    assert hooks == [drills.obey_drill if obeys else None]


async def test_the_hook_runs_the_jobs_drill(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(
        "grpc_resilience_mesh.chaos.scenarios.receipts.drills.time.sleep", slept.append
    )
    await drills.obey_drill({DRILL_KEY: {"block_s": 1.5}})
    await drills.obey_drill({"charge_id": "no drill"})
    assert slept == [1.5]


def test_the_product_has_no_drill_code() -> None:
    assert not (PRODUCT / "notification" / "drills.py").exists()
    mentions = [p.name for p in PRODUCT.rglob("*.py") if "Drill" in p.read_text()]
    assert mentions == []
