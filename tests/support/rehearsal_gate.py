"""The rehearsals' tests (tests/compose, tests/k8s, tests/k8s_node) run only inside the make
target that brings up what they test; elsewhere they are collected and skipped, saying why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

INSTALL_VARIABLE = "MESH_INSTALL_REHEARSAL"


def skip_installs_outside(items: list[pytest.Item]) -> None:
    """Marks the tests marked `install` skipped unless INSTALL_VARIABLE is 1: they fetch
    distributions from PyPI into clean venvs, traffic off this machine that `make test` (loopback
    only, 15 minutes) leaves to `make install-rehearsal`, which .ci/run runs after it."""
    if os.environ.get(INSTALL_VARIABLE) == "1":
        return
    skip = pytest.mark.skip(reason="installs from PyPI: run by `make install-rehearsal`")
    for item in items:
        if item.get_closest_marker("install") is not None:
            item.add_marker(skip)


def skip_outside(items: list[pytest.Item], folder: Path, variable: str, reason: str) -> None:
    """Marks the tests in `folder` skipped with `reason` unless `variable` is 1 (the rehearsal's
    script sets it)."""
    if os.environ.get(variable) == "1":
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if Path(str(item.fspath)).parent == folder:
            item.add_marker(skip)
