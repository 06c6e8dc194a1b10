"""Run the payment service: `python -m mesh.payment` (configured from env)."""

from mesh.payment.servicer import build
from mesh.runtime.server import run

if __name__ == "__main__":
    run("payment", build)
