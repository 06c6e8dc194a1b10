"""A service told to dial through xDS serves CSDS, which needs grpcio-csds (the [xds] extra):
without it, a ConfigError naming the xds:/// variables and the install (one line on stderr and
exit 2, as every ConfigError), never a traceback; a service that does not dial xDS needs none."""

from __future__ import annotations

import sys

import pytest

from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.runtime.admin_server import csds_adder
from grpc_resilience_mesh.services.runtime.config import ServiceConfig
from grpc_resilience_mesh.services.settings import XDS_EXTRA

CSDS_MODULE = "grpc_resilience_mesh.services.runtime.csds"


@pytest.fixture
def no_grpc_csds(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as the base install has it: grpc_csds does not import."""
    monkeypatch.setitem(sys.modules, "grpc_csds", None)
    monkeypatch.delitem(sys.modules, CSDS_MODULE, raising=False)


@pytest.mark.usefixtures("no_grpc_csds")
def test_an_xds_dependency_without_grpcio_csds_is_a_config_error_naming_the_extra() -> None:
    config = ServiceConfig.from_env("gateway", {"RECOMMENDATION_ADDR": "xds:///recommendation"})
    with pytest.raises(ConfigError, match="RECOMMENDATION_ADDR") as err:
        csds_adder(config)
    assert XDS_EXTRA in str(err.value)
    assert "PROFILE_ADDR" not in str(err.value)  # the gateway's other edges dial as usual


@pytest.mark.usefixtures("no_grpc_csds")
def test_without_an_xds_dependency_grpcio_csds_is_not_needed() -> None:
    assert csds_adder(ServiceConfig.from_env("recommendation", {})) is None


def test_with_grpcio_csds_an_xds_dependency_gets_csds() -> None:
    config = ServiceConfig.from_env("recommendation", {"PROFILE_ADDR": "xds:///profile"})
    add = csds_adder(config)
    assert add is not None and add.__module__ == CSDS_MODULE
