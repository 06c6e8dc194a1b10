"""The notification service: the receipt worker inside the common serve() (health, metrics,
graceful stop). Its gRPC port serves health only: readiness does not wait for Redis."""

from __future__ import annotations

from mesh.notification.config import NotificationConfig
from mesh.notification.metrics import JobMetrics
from mesh.notification.worker import ReceiptWorker
from mesh.runtime.server import Runtime, Service


async def build(runtime: Runtime) -> Service:
    config = NotificationConfig.from_env(runtime.config)
    worker = ReceiptWorker(config, JobMetrics(runtime.metrics.registry, config.queue))
    worker.start()
    return Service(names=[], register=lambda _server: None, close=worker.close)
