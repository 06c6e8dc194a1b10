"""Receipt jobs: how long finished jobs are kept (from the environment), which drills a job
can carry and which a worker obeys."""

from __future__ import annotations

import asyncio

import pytest

from grpc_resilience_mesh.chaos.scenarios.receipts import drills
from grpc_resilience_mesh.chaos.scenarios.receipts.drills import Drill
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.contracts.receipt_job import (
    DRILL_KEY,
    ReceiptRetention,
    ReceiptRetry,
)
from grpc_resilience_mesh.services.notification.config import NotificationConfig
from grpc_resilience_mesh.services.runtime.config import ServiceConfig


def test_finished_jobs_are_kept_by_age_and_by_count_by_default() -> None:
    opts = ReceiptRetry().job_options("receipt-x")
    assert opts["removeOnComplete"] == {"age": 7 * 24 * 3600, "count": 10_000}
    assert opts["removeOnFail"] == {"age": 30 * 24 * 3600, "count": 10_000}


def test_retention_comes_from_the_environment_and_refuses_nonsense() -> None:
    env = {"RECEIPT_KEEP_COMPLETED": "50", "RECEIPT_KEEP_FAILED_S": "3600"}
    kept = ReceiptRetention.from_env(env)
    assert ReceiptRetry().job_options("receipt-x", kept)["removeOnComplete"]["count"] == 50
    assert kept.job_options()["removeOnFail"] == {"age": 3600, "count": 10_000}
    for bad in ("0", "-1", "1e3", "ten", " 5"):
        with pytest.raises(ConfigError, match="RECEIPT_KEEP_FAILED"):
            ReceiptRetention.from_env({"RECEIPT_KEEP_FAILED": bad})


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, None),
        ({DRILL_KEY: {"exit": True}}, Drill(exit=True)),
        ({DRILL_KEY: {"block_s": 2, "offload": True}}, Drill(block_s=2.0, offload=True)),
        ({DRILL_KEY: {"exit": "yes"}}, Drill()),  # only a JSON true exits
        ({DRILL_KEY: "exit"}, None),
        ({DRILL_KEY: {"block_s": -1}}, None),
        ({DRILL_KEY: {"block_s": float("nan")}}, None),
        ({DRILL_KEY: {"block_s": 3600}}, None),
        ({DRILL_KEY: {"block_s": True}}, None),
        ("not a dict", None),
    ],
)
def test_a_drill_is_read_from_job_data_and_a_malformed_one_is_never_obeyed(
    data: object, expected: Drill | None
) -> None:
    assert Drill.of(data) == expected


def test_the_poison_drill_exits_hard(monkeypatch: pytest.MonkeyPatch) -> None:
    codes: list[int] = []

    def fake_exit(code: int) -> None:
        codes.append(code)

    monkeypatch.setattr("grpc_resilience_mesh.chaos.scenarios.receipts.drills.os._exit", fake_exit)
    asyncio.run(Drill(exit=True).run())
    assert codes == [drills.POISON_EXIT_CODE]


def test_a_blocking_drill_blocks_the_loop_unless_offloaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept: list[tuple[float, bool]] = []

    def fake_sleep(s: float) -> None:
        try:
            asyncio.get_running_loop()
            slept.append((s, True))  # called on the event loop's thread
        except RuntimeError:
            slept.append((s, False))

    monkeypatch.setattr(
        "grpc_resilience_mesh.chaos.scenarios.receipts.drills.time.sleep", fake_sleep
    )
    asyncio.run(Drill(block_s=2.0).run())
    asyncio.run(Drill(block_s=2.0, offload=True).run())
    assert slept == [(2.0, True), (2.0, False)]


def _service() -> ServiceConfig:
    return ServiceConfig.from_env(
        "notification",
        {"REDIS_ADDR": "127.0.0.1:1", "SMTP_ADDR": "127.0.0.1:2", "LISTEN_ADDR": "127.0.0.1:0"},
    )


def test_drills_are_off_unless_the_worker_is_started_with_notify_drills() -> None:
    service = _service()
    assert NotificationConfig.from_env(service, {}).drills is False
    assert NotificationConfig.from_env(service, {"NOTIFY_DRILLS": "1"}).drills is True
    with pytest.raises(ConfigError, match="NOTIFY_DRILLS"):
        NotificationConfig.from_env(service, {"NOTIFY_DRILLS": "yes"})
