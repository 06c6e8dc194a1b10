"""Run the recommendation service: `python -m grpc_resilience_mesh.services.recommendation`
(configured from env)."""

from grpc_resilience_mesh.services.recommendation.servicer import build
from grpc_resilience_mesh.services.runtime.server import run

if __name__ == "__main__":
    run("recommendation", build)
