"""Where the reference pages' facts live in the code: the only imports that change when a
module moves (the generators below read these objects, never the paths)."""

from __future__ import annotations

from pathlib import Path

from chaos.experiment.loading import catalogue
from mesh import settings
from mesh.notification import config as notification_config
from mesh.runtime import config as runtime_config
from mesh.runtime import ratelimit
from mesh.telemetry import names
from mesh.telemetry.job_metrics import JobMetrics
from mesh.telemetry.metrics import MeshMetrics

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "reference"

# Scanned for the variables read without a settings model, and for span events.
SCANNED = (ROOT / "services" / "mesh", ROOT / "chaos")
EVENTS_SCANNED = (ROOT / "services" / "mesh",)

# Imported so that every settings model is a subclass of EnvSettings by the time it is read.
SETTINGS_MODULES = (runtime_config, ratelimit, notification_config)

__all__ = [
    "DOCS",
    "EVENTS_SCANNED",
    "ROOT",
    "SCANNED",
    "SETTINGS_MODULES",
    "JobMetrics",
    "MeshMetrics",
    "catalogue",
    "names",
    "settings",
]
