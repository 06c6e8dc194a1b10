"""Fault leases on the embedded server (our extension): a lease not renewed rolls its proxies back
(toxics removed, proxies enabled) within its ttl plus one expiry check; a renewed one never does;
a released one leaves the proxies alone. Real Toxiproxy has no leases (404)."""

from __future__ import annotations

import time

import pytest

from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError
from grpc_resilience_mesh.embedded_toxiproxy.leases import EXPIRY_CHECK_S
from tests.integration.embedded_toxiproxy.toxiproxy_helpers import ApiServer, error_of, http

TTL_S = 1.0


def _faulted(client: ToxiproxyClient, echo_port: int, name: str = "db") -> None:
    client.create_proxy(name, "127.0.0.1:0", f"127.0.0.1:{echo_port}")
    client.add_toxic(name, "latency", attributes={"latency": 500}, name="slow")
    client.add_toxic(name, "timeout", stream="upstream", attributes={"timeout": 0})
    client.disable(name)


def _empty_after(client: ToxiproxyClient, proxy: str, since: float, most_s: float) -> float:
    """Seconds from `since` until `proxy` lists no toxic and is enabled (polled every 20 ms)."""
    while time.monotonic() - since < most_s:
        if not client.toxics(proxy) and client.get_proxy(proxy)["enabled"]:
            return time.monotonic() - since
        time.sleep(0.02)
    raise AssertionError(f"{proxy} still faulted {most_s} s after its last renewal")


def test_a_lapsed_lease_rolls_its_proxies_back(client: ToxiproxyClient, echo_port: int) -> None:
    _faulted(client, echo_port)
    _faulted(client, echo_port, "bystander")
    created = client.put_lease("run-1", TTL_S, ["db"])
    assert created["proxies"] == ["db"] and created["ttl_s"] == TTL_S
    started = time.monotonic()
    while time.monotonic() - started < 2.5 * TTL_S:  # renewed: kept well past its ttl
        last_renewal = time.monotonic()
        client.put_lease("run-1", TTL_S, ["db"])
        time.sleep(TTL_S / 3)
        assert sorted(t["name"] for t in client.toxics("db")) == ["slow", "timeout_upstream"]
    assert set(client.leases()) == {"run-1"}
    took_s = _empty_after(client, "db", last_renewal, most_s=5.0)
    print(f"\nlease ttl {TTL_S} s: proxy rolled back {took_s:.2f} s after the last renewal")
    assert took_s >= TTL_S * 0.9, "rolled back before the lease lapsed"
    assert took_s <= TTL_S + 2 * EXPIRY_CHECK_S + 0.5
    assert client.leases() == {}
    assert len(client.toxics("bystander")) == 2, "a proxy outside the lease is not touched"
    assert client.get_proxy("bystander")["enabled"] is False


def test_a_released_lease_leaves_the_faults_to_their_owner(
    client: ToxiproxyClient, echo_port: int
) -> None:
    _faulted(client, echo_port)
    client.put_lease("run-2", TTL_S, ["db"])
    client.delete_lease("run-2")
    time.sleep(TTL_S + 3 * EXPIRY_CHECK_S)  # past the lapse it no longer has
    assert len(client.toxics("db")) == 2
    with pytest.raises(ToxiproxyError) as gone:
        client.delete_lease("run-2")
    assert gone.value.status == 404 and gone.value.message == "lease not found"


def test_a_lease_on_a_proxy_that_does_not_exist_lapses_quietly(
    client: ToxiproxyClient, echo_port: int
) -> None:
    client.put_lease("run-3", 0.2, ["nowhere"])
    since = time.monotonic()
    while client.leases() and time.monotonic() - since < 5.0:
        time.sleep(0.02)
    assert client.leases() == {}
    assert client.version()  # the server still answers


@pytest.mark.parametrize(
    ("body", "wording"),
    [
        ({"proxies": ["db"]}, "ttl_s: expected a number"),
        ({"ttl_s": "3", "proxies": ["db"]}, "ttl_s: expected a number"),
        ({"ttl_s": 0, "proxies": ["db"]}, "ttl_s: expected 0 < ttl_s <= 3600"),
        (b'{"ttl_s": 1e999, "proxies": ["db"]}', "ttl_s: expected 0 < ttl_s <= 3600"),
        ({"ttl_s": 3, "proxies": "db"}, "proxies: expected a list"),
        ({"ttl_s": 3, "proxies": [1]}, "proxies: expected a list"),
        ([], "cannot unmarshal array"),
    ],
)
def test_a_bad_lease_is_refused(toxiproxy: ApiServer, body: object, wording: str) -> None:
    if isinstance(body, bytes):
        status, _, raw = http(toxiproxy, "PUT", "/leases/x", raw=body)
    else:
        status, _, raw = http(toxiproxy, "PUT", "/leases/x", body)
    assert status == 400
    assert wording in error_of(400, raw)["error"]
    status, _, raw = http(toxiproxy, "GET", "/leases")
    assert (status, raw) == (200, b"{}")


def test_put_creates_then_renews(toxiproxy: ApiServer) -> None:
    body = {"ttl_s": 30, "proxies": ["db"]}
    assert http(toxiproxy, "PUT", "/leases/a", body)[0] == 201
    assert http(toxiproxy, "PUT", "/leases/a", body)[0] == 200
    assert http(toxiproxy, "DELETE", "/leases/a")[0] == 204
