"""Run the gateway service: `python -m mesh.gateway` (configured from env)."""

from mesh.gateway.servicer import build
from mesh.runtime.server import run

if __name__ == "__main__":
    run("gateway", build)
