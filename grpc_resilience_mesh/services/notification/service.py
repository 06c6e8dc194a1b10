"""The notification service: the receipt worker inside the common serve() (health, metrics,
tracing, graceful stop). Its gRPC port serves health only: readiness does not wait for Redis."""

from __future__ import annotations

from grpc_resilience_mesh.services.notification.config import NotificationConfig
from grpc_resilience_mesh.services.notification.worker import BeforeSend, ReceiptWorker
from grpc_resilience_mesh.services.runtime.server import Runtime, Service
from grpc_resilience_mesh.services.telemetry.job_metrics import JobMetrics
from grpc_resilience_mesh.services.telemetry.tracing import TRACER_NAME


async def build(runtime: Runtime, before_send: BeforeSend | None = None) -> Service:
    """The worker; `before_send` runs before each send (the drill worker's, in
    grpc_resilience_mesh/chaos/)."""
    config = NotificationConfig.from_env(runtime.config)
    tracer = runtime.tracing.provider.get_tracer(TRACER_NAME) if runtime.tracing else None
    metrics = JobMetrics(runtime.metrics.registry, config.queue)
    worker = ReceiptWorker(config, metrics, tracer, before_send)
    worker.start()
    return Service(names=[], register=lambda _server: None, close=worker.close)
