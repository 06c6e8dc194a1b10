"""grpcio-csds is the `[xds]` extra's (and dev's, whose suite runs --xds), never the base
install's: its xds-protos overwrites opentelemetry-proto's files (grpc/grpc#42428)
(tests/integration/packaging: what the package imports without it, and both installs)."""

from __future__ import annotations

import tomllib

from tests.unit.deploy.deploy_sources import ROOT

CSDS = "grpcio-csds~=1.85.0"


def test_grpcio_csds_is_in_the_xds_and_dev_extras_and_not_the_base() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("grpcio-csds")]
    extras = project["optional-dependencies"]
    assert extras["xds"] == [CSDS]
    assert CSDS in extras["dev"]
