"""MESH_TLS=1: every internal hop is TLS through Toxiproxy; plaintext and strangers are refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.launch.certs import write_certs
from grpc_resilience_mesh.launch.mesh import Mesh
from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc, payment_pb2

INTERNAL = ("profile", "recommendation", "payment")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("certs")
    result = CliRunner().invoke(app, ["certs", "--dir", str(directory)])
    assert result.exit_code == 0, result.output
    return directory


@pytest.fixture(scope="module")
def tls_mesh(tmp_path_factory: pytest.TempPathFactory, certs: Path) -> Iterator[Mesh]:
    mesh = Mesh(
        state_dir=tmp_path_factory.mktemp("tls-mesh"),
        ports=Ports.auto(),
        env={"MESH_TLS": "1", "MESH_TLS_DIR": str(certs)},
    )
    mesh.start()
    try:
        yield mesh
    finally:
        mesh.stop()


def _check(channel: grpc.Channel) -> int:
    reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=3)
    return int(reply.status)


def test_certs_cover_every_service(certs: Path) -> None:
    names = {p.name for p in certs.iterdir()}
    assert {"ca.crt", "ca.key"} <= names
    for service in ("gateway", *INTERNAL):
        assert {f"{service}.crt", f"{service}.key"} <= names
    assert (certs / "payment.key").stat().st_mode & 0o077 == 0


def test_home_and_checkout_work_over_tls_hops(tls_mesh: Mesh) -> None:
    state = tls_mesh.state
    assert state is not None and state.api_key
    md = (("authorization", f"Bearer {state.api_key}"),)
    with grpc.insecure_channel(state.gateway) as channel:
        stub = gateway_pb2_grpc.GatewayStub(channel)
        home = stub.GetHome(gateway_pb2.GetHomeRequest(user_id="u-0001"), timeout=5, metadata=md)
        assert home.profile.user_id == "u-0001"
        assert list(home.degraded) == []  # gateway -> recommendation -> profile, all TLS
        out = stub.Checkout(
            gateway_pb2.CheckoutRequest(
                user_id="u-0001", amount_cents=500, currency="USD", idempotency_key="tls-test-0001"
            ),
            timeout=5,
            metadata=md,
        )
        assert out.status == payment_pb2.CHARGE_STATUS_SUCCEEDED


@pytest.mark.parametrize("service", INTERNAL)
def test_plaintext_client_is_refused(tls_mesh: Mesh, service: str) -> None:
    assert tls_mesh.state is not None
    with grpc.insecure_channel(tls_mesh.state.services[service]["listen"]) as channel:
        with pytest.raises(grpc.RpcError) as info:
            _check(channel)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize("service", INTERNAL)
def test_tls_client_trusting_the_ca_gets_in(tls_mesh: Mesh, certs: Path, service: str) -> None:
    assert tls_mesh.state is not None
    creds = grpc.ssl_channel_credentials((certs / "ca.crt").read_bytes())
    addr = tls_mesh.state.services[service]["listen"]
    with grpc.secure_channel(
        addr, creds, options=[("grpc.ssl_target_name_override", service)]
    ) as channel:
        assert _check(channel) == health_pb2.HealthCheckResponse.SERVING


def test_client_trusting_another_ca_is_refused(tls_mesh: Mesh, tmp_path: Path) -> None:
    assert tls_mesh.state is not None
    write_certs(tmp_path, names=["stranger"])
    creds = grpc.ssl_channel_credentials((tmp_path / "ca.crt").read_bytes())
    addr = tls_mesh.state.services["payment"]["listen"]
    with grpc.secure_channel(
        addr, creds, options=[("grpc.ssl_target_name_override", "payment")]
    ) as channel:
        with pytest.raises(grpc.RpcError) as info:
            _check(channel)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
