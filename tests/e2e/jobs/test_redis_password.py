"""A Redis that requires a password (as docker-compose.yml's does): payment's relay and the
notification worker AUTH with REDIS_PASSWORD, and a receipt goes from a committed charge to the
mailbox; without the password the relay is refused and keeps the job for later."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.exceptions
from bullmq import Queue
from prometheus_client import CollectorRegistry

from grpc_resilience_mesh.launch.ports import free_port
from grpc_resilience_mesh.launch.redis_server import redis_args
from grpc_resilience_mesh.services.contracts.receipt_job import QUEUE, job_id_for, redis_url
from grpc_resilience_mesh.services.notification.config import NotificationConfig
from grpc_resilience_mesh.services.payment.ledger import Ledger
from grpc_resilience_mesh.services.payment.outbox import relay_from_env
from grpc_resilience_mesh.services.runtime.config import ServiceConfig
from grpc_resilience_mesh.services.telemetry.job_metrics import JobMetrics
from tests.e2e.jobs.jobs_helpers import wait_state
from tests.support.polling import await_until, wait_until

PASSWORD = "p@ss:w/rd#1"
"""URL-special characters on purpose: the URL must carry the password percent-encoded."""


def _refuses_without_auth(addr: str) -> bool:
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"-NOAUTH")
    except OSError:
        return False


@pytest.fixture
def locked_redis(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    args = [*redis_args(port, tmp_path / "redis"), "--requirepass", PASSWORD]
    popen = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    addr = f"127.0.0.1:{port}"
    try:
        wait_until(lambda: _refuses_without_auth(addr), 10, "redis asking for AUTH", 0.05)
        yield addr
    finally:
        popen.terminate()
        popen.wait(10)


async def test_relay_and_worker_auth_with_redis_password(
    locked_redis: str, smtp_sink: Any, tmp_path: Path, run_worker: Callable[..., Any]
) -> None:
    queue_name = f"test-{tmp_path.name[-8:]}"
    env = {
        "REDIS_ADDR": locked_redis,
        "SMTP_ADDR": smtp_sink.addr,
        "REDIS_PASSWORD": PASSWORD,
        "RECEIPT_QUEUE": queue_name,
        "NOTIFY_QUEUE": queue_name,
        "LISTEN_ADDR": f"127.0.0.1:{free_port()}",
    }
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    queue = Queue(queue_name, {"connection": redis_url(locked_redis, PASSWORD)})
    relay = relay_from_env(ledger, locked_redis, JobMetrics(CollectorRegistry(), QUEUE), env)
    try:
        record, _ = await ledger.charge("auth-key-1", "u-0004", 1999, "USD", "")
        assert await relay.relay_once() == 1
        config = NotificationConfig.from_env(ServiceConfig.from_env("notification", env), env)
        assert PASSWORD not in repr(config)
        run_worker(config)
        job_id = job_id_for(record.charge_id)
        assert await wait_state(queue, job_id) == "completed"

        async def mailed() -> bool:
            return record.charge_id in {m.charge_id for m in smtp_sink.mailbox.messages()}

        await await_until(mailed, 15, f"the receipt of {record.charge_id} mailed")
    finally:
        await relay.close()
        await queue.obliterate(force=True)
        await queue.close()
        await ledger.close()


async def test_relay_without_the_password_is_refused_and_keeps_the_job(
    locked_redis: str, tmp_path: Path
) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    env = {"RECEIPT_QUEUE": f"test-{tmp_path.name[-8:]}"}
    relay = relay_from_env(ledger, locked_redis, JobMetrics(CollectorRegistry(), QUEUE), env)
    try:
        await ledger.charge("auth-key-2", "u-0005", 500, "USD", "")
        with pytest.raises(redis.exceptions.AuthenticationError):
            await relay.relay_once()
        assert await ledger.outbox_pending() == 1
    finally:
        await relay.close()
        await ledger.close()
