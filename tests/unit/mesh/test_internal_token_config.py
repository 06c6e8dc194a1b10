"""The internal token from the environment: a service reads MESH_INTERNAL_TOKEN (never printing
it), the gateway's port never requires it, every edge sends it; `mesh up` gives every service
one token per run (and mesh-xds the admin token), never on a command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpc_aio_resilience.attempt import AttemptHook
from grpc_aio_resilience.edge_policy import EdgePolicy
from grpc_aio_resilience.events import EventBus
from grpc_aio_resilience.pipeline import build_pipeline
from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.launch.processes import LaunchError
from grpc_resilience_mesh.launch.wiring import Security, Wiring, mesh_token
from grpc_resilience_mesh.launch.xds_plane import XdsPlane
from grpc_resilience_mesh.services.runtime.config import ConfigError, ServiceConfig
from grpc_resilience_mesh.services.runtime.internal_auth import (
    InternalTokenLayer,
    internal_gate,
    internal_metadata,
)
from grpc_resilience_mesh.services.topology import service

GOOD = "an-internal-token-of-enough-chars"


def test_a_service_takes_its_token_and_keeps_it_out_of_its_repr() -> None:
    cfg = ServiceConfig.from_env("payment", {"MESH_INTERNAL_TOKEN": GOOD})
    assert cfg.internal_token == GOOD and GOOD not in repr(cfg)
    assert ServiceConfig.from_env("payment", {}).internal_token is None
    with pytest.raises(ConfigError) as caught:
        ServiceConfig.from_env("payment", {"MESH_INTERNAL_TOKEN": "short-secret"})
    assert "MESH_INTERNAL_TOKEN" in str(caught.value) and "short-secret" not in str(caught.value)


def test_every_service_but_the_gateway_is_gated_when_there_is_a_token() -> None:
    for name in ("profile", "recommendation", "payment", "notification"):
        assert [type(layer) for layer in internal_gate(name, GOOD)] == [InternalTokenLayer]
        assert internal_gate(name, None) == ()
    assert internal_gate("gateway", GOOD) == ()


def test_every_attempt_carries_the_credential_and_the_caller_cannot_drop_it() -> None:
    pipeline = build_pipeline(
        EdgePolicy(), dependency="profile", bus=EventBus(), carry=internal_metadata(GOOD)
    )
    hook = next(s for s in pipeline.strategies if isinstance(s, AttemptHook))
    assert hook._carry == (("authorization", f"Bearer {GOOD}"),)


def test_mesh_up_makes_a_token_per_run_unless_configured_or_off() -> None:
    first, second = mesh_token({}), mesh_token({})
    assert first and second and first != second and len(first) >= 32
    assert mesh_token({"MESH_INTERNAL_TOKEN": GOOD}) == GOOD
    assert mesh_token({"MESH_INTERNAL_AUTH": "off", "MESH_INTERNAL_TOKEN": GOOD}) is None
    with pytest.raises(LaunchError, match="MESH_INTERNAL_TOKEN"):
        mesh_token({"MESH_INTERNAL_TOKEN": "short"})


@pytest.mark.parametrize("token", [GOOD, None])
def test_every_service_gets_the_token_and_mesh_xds_the_admin_token(
    tmp_path: Path, token: str | None
) -> None:
    plane = XdsPlane(tmp_path, 1, 2, binary=Path("/bin/true"))
    wiring = Wiring(Ports.default(), tmp_path, False, {}, {}, plane)
    admin = "an-admin-token-of-enough-chars-x"
    security = Security("key", None, None, admin, token)
    for name in ("gateway", "payment", "profile", "recommendation", "notification"):
        env = wiring.service_env(service(name), "full", security)
        assert env["MESH_INTERNAL_TOKEN"] == (token or "")  # blank overrides an inherited one
    args, env, _ = wiring.command("xds", "full", security)
    assert env == {"MESH_XDS_TOKEN": admin}
    assert not any(admin in a or (token and token in a) for a in args)
    state = wiring.describe({}, "full", "key", None, admin, token)
    assert (state.admin_token, state.internal_token) == (admin, token)
