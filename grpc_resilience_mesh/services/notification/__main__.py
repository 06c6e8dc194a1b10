"""Run the receipt worker: `python -m grpc_resilience_mesh.services.notification` (configured from
the environment)."""

from grpc_resilience_mesh.services.notification.service import build
from grpc_resilience_mesh.services.runtime.server import run

if __name__ == "__main__":
    run("notification", build)
