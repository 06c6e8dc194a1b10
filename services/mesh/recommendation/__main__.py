"""Run the recommendation service: `python -m mesh.recommendation` (configured from env)."""

from mesh.recommendation.servicer import build
from mesh.runtime.server import run

if __name__ == "__main__":
    run("recommendation", build)
