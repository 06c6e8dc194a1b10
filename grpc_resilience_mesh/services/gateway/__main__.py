"""Run the gateway service: `python -m grpc_resilience_mesh.services.gateway` (configured from
env)."""

from grpc_resilience_mesh.services.gateway.servicer import build
from grpc_resilience_mesh.services.runtime.server import run

if __name__ == "__main__":
    run("gateway", build)
