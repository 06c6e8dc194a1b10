"""Our typed client: every call, and errors raised as ToxiproxyError with the API's status."""

from __future__ import annotations

import pytest

from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError
from tests.integration.embedded_toxiproxy.toxiproxy_helpers import (
    BOTH_SERVERS,
    connect,
    listen_port,
    round_trip_ms,
)

pytestmark = pytest.mark.timeout(20)


@BOTH_SERVERS
def test_client_round_trip(client: ToxiproxyClient, echo_port: int) -> None:
    upstream = f"127.0.0.1:{echo_port}"
    assert client.version() == "2.12.0"
    proxy = client.create_proxy("a", "127.0.0.1:0", upstream)
    assert client.get_proxy("a") == proxy
    assert set(client.proxies()) == {"a"}
    toxic = client.add_toxic("a", "latency", attributes={"latency": 5}, name="lat")
    assert toxic["name"] == "lat" and client.toxics("a") == [toxic]
    updated = client.update_toxic("a", "lat", attributes={"jitter": 1}, toxicity=0.5)
    assert updated["attributes"] == {"latency": 5, "jitter": 1} and updated["toxicity"] == 0.5
    assert client.get_toxic("a", "lat") == updated
    client.remove_toxic("a", "lat")
    assert client.disable("a")["enabled"] is False
    assert client.enable("a")["listen"] == proxy["listen"]
    assert client.update_proxy("a", upstream="127.0.0.1:1")["upstream"] == "127.0.0.1:1"
    populated = client.populate([{"name": "b", "listen": "127.0.0.1:0", "upstream": upstream}])
    assert [p["name"] for p in populated] == ["b"]
    with connect(listen_port(populated[0])) as sock:
        round_trip_ms(sock)
    client.add_toxic("b", "latency")
    client.reset()
    assert client.toxics("b") == []
    client.delete_proxy("a")
    assert set(client.proxies()) == {"b"}


@pytest.mark.parametrize(
    ("call", "status", "message"),
    [
        (lambda c: c.get_proxy("nope"), 404, "proxy not found"),
        (lambda c: c.remove_toxic("p", "nope"), 404, "toxic not found"),
        (lambda c: c.add_toxic("p", "nope"), 400, "invalid toxic type"),
        (lambda c: c.create_proxy("p", "127.0.0.1:0", "x:1"), 409, "proxy already exists"),
        (lambda c: c.populate([{"name": "x"}]), 400, "missing required field: upstream at proxy 1"),
    ],
)
@BOTH_SERVERS
def test_client_errors(
    client: ToxiproxyClient, echo_port: int, call: object, status: int, message: str
) -> None:
    client.create_proxy("p", "127.0.0.1:0", f"127.0.0.1:{echo_port}")
    with pytest.raises(ToxiproxyError) as info:
        call(client)  # type: ignore[operator]
    assert (info.value.status, info.value.message) == (status, message)


def test_unreachable_server_is_status_zero() -> None:
    with pytest.raises(ToxiproxyError) as info:
        ToxiproxyClient("http://127.0.0.1:9", timeout_s=1).version()
    assert info.value.status == 0
