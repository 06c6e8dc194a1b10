"""Run the payment service: `python -m grpc_resilience_mesh.services.payment` (configured from
env)."""

from grpc_resilience_mesh.services.payment.servicer import build
from grpc_resilience_mesh.services.runtime.server import run

if __name__ == "__main__":
    run("payment", build)
