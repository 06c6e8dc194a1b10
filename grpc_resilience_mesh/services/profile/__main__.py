"""Run the profile service: `python -m grpc_resilience_mesh.services.profile` (configured from
env)."""

from grpc_resilience_mesh.services.profile.servicer import build
from grpc_resilience_mesh.services.runtime.server import run

if __name__ == "__main__":
    run("profile", build)
