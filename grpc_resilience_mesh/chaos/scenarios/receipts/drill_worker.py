"""The drill worker: the product's receipt worker, obeying the jobs' test-only drills (drills.py)
when started with NOTIFY_DRILLS=1. `python -m
grpc_resilience_mesh.chaos.scenarios.receipts.drill_worker`, started by the job experiments
(stalls.py) and the end-to-end job tests in place of
`grpc_resilience_mesh.services.notification`."""

from __future__ import annotations

from grpc_resilience_mesh.chaos.scenarios.receipts.drills import obey_drill
from grpc_resilience_mesh.services.notification.config import NotificationConfig
from grpc_resilience_mesh.services.notification.service import build
from grpc_resilience_mesh.services.runtime.server import Runtime, Service, run


async def build_drill_worker(runtime: Runtime) -> Service:
    config = NotificationConfig.from_env(runtime.config, runtime.environ)
    return await build(runtime, before_send=obey_drill if config.drills else None)


if __name__ == "__main__":
    run("notification", build_drill_worker)
