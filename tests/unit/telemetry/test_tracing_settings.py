"""Tracing's settings follow the mesh's rule: a bad value is an error naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.telemetry.tracing import setup_tracing


@pytest.mark.parametrize("value", ["soon", "-5", "0", "nan", "inf"])
def test_a_bad_batch_delay_is_refused_by_name(value: str, tmp_path: Path) -> None:
    env = {"MESH_TRACES_DIR": str(tmp_path), "OTEL_BSP_SCHEDULE_DELAY": value}
    with pytest.raises(ConfigError, match=r"^OTEL_BSP_SCHEDULE_DELAY=.* milliseconds > 0"):
        setup_tracing("profile", env)


@pytest.mark.parametrize("value", ["", "200", " 50.5 "])
def test_a_good_or_unset_batch_delay_is_used(value: str, tmp_path: Path) -> None:
    env = {"MESH_TRACES_DIR": str(tmp_path), "OTEL_BSP_SCHEDULE_DELAY": value}
    provider = setup_tracing("profile", env)
    assert provider is not None
    provider.shutdown()


def test_with_tracing_off_the_delay_is_not_read(tmp_path: Path) -> None:
    assert setup_tracing("profile", {"MESH_TRACING": "0", "OTEL_BSP_SCHEDULE_DELAY": "x"}) is None
