"""Run the profile service: `python -m mesh.profile` (configured from env)."""

from mesh.profile.servicer import build
from mesh.runtime.server import run

if __name__ == "__main__":
    run("profile", build)
