"""The rehearsals' tests (tests/compose, tests/k8s, tests/k8s_node) run only inside the make
target that brings up what they test; elsewhere they are collected and skipped, saying why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def skip_outside(items: list[pytest.Item], folder: Path, variable: str, reason: str) -> None:
    """Marks the tests in `folder` skipped with `reason` unless `variable` is 1 (the rehearsal's
    script sets it)."""
    if os.environ.get(variable) == "1":
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if Path(str(item.fspath)).parent == folder:
            item.add_marker(skip)
