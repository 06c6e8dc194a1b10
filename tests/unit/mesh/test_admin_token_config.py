"""The admin token from the environment: a service reads MESH_ADMIN_TOKEN (never printing it),
and `mesh up` gives every service and its Toxiproxy one token per run unless told otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.launch.processes import LaunchError
from grpc_resilience_mesh.launch.wiring import Security, Wiring, control_token
from grpc_resilience_mesh.services.runtime.config import ConfigError, ServiceConfig
from grpc_resilience_mesh.services.topology import service

GOOD = "a-token-of-at-least-sixteen-chars"


def test_a_service_takes_its_token_and_keeps_it_out_of_its_repr() -> None:
    cfg = ServiceConfig.from_env("profile", {"MESH_ADMIN_TOKEN": GOOD})
    assert cfg.admin_token == GOOD and GOOD not in repr(cfg)
    assert ServiceConfig.from_env("profile", {}).admin_token is None
    assert ServiceConfig.from_env("profile", {"MESH_ADMIN_TOKEN": "  "}).admin_token is None


@pytest.mark.parametrize("bad", ["short-secret", "has a space in it 12345", "x" * 513, "é" * 20])
def test_a_token_that_cannot_be_one_names_the_variable_not_the_value(bad: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ServiceConfig.from_env("profile", {"MESH_ADMIN_TOKEN": bad})
    assert "MESH_ADMIN_TOKEN" in str(caught.value) and bad not in str(caught.value)


def test_mesh_up_makes_a_token_per_run_unless_configured_or_off() -> None:
    first, second = control_token({}), control_token({})
    assert first and second and first != second and len(first) >= 32
    assert control_token({"MESH_ADMIN_TOKEN": GOOD}) == GOOD
    assert control_token({"MESH_ADMIN_AUTH": "off", "MESH_ADMIN_TOKEN": GOOD}) is None
    with pytest.raises(LaunchError, match="MESH_ADMIN_TOKEN"):
        control_token({"MESH_ADMIN_TOKEN": "short"})


@pytest.mark.parametrize("token", [GOOD, None])
def test_every_service_and_toxiproxy_get_the_token_in_their_environment(
    tmp_path: Path, token: str | None
) -> None:
    wiring = Wiring(Ports.default(), tmp_path, False, {}, {})
    security = Security("key", None, None, token)
    for name in ("gateway", "payment", "profile", "recommendation", "notification"):
        env = wiring.service_env(service(name), "full", security)
        assert env["MESH_ADMIN_TOKEN"] == (token or "")  # blank overrides an inherited one
    args, env, _ = wiring.command("toxiproxy", "full", security)
    assert env == {"MESH_TOXIPROXY_TOKEN": token or ""}
    assert not any(token and token in a for a in args)  # never on a command line
