"""`mesh --version`'s line, read from the installed distribution's metadata."""

from __future__ import annotations

DISTRIBUTION = "grpc-resilience-mesh"


def version_line() -> str:
    """`mesh <version of the installed distribution>`."""
    # Imported here: importlib.metadata (email, zipfile, csv...) was 40 ms of `mesh --help`.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"mesh {version(DISTRIBUTION)}"
    except PackageNotFoundError:
        return "mesh (not installed: no version)"
