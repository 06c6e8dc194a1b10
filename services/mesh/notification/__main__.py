"""Run the receipt worker: `python -m mesh.notification` (configured from the environment)."""

from mesh.notification.service import build
from mesh.runtime.server import run

if __name__ == "__main__":
    run("notification", build)
