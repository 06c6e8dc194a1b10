"""The embedded server's optional API token: with one, a request without it gets 401 and a JSON
error saying how to send it, and changes nothing; with it, the API works; without a token set,
the server is open, as Toxiproxy."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError
from tests.integration.embedded_toxiproxy.toxiproxy_helpers import API_TOKEN as TOKEN
from tests.integration.embedded_toxiproxy.toxiproxy_helpers import RunningServer


def raw(url: str, method: str, body: object = None, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, method=method)
    request.add_header("User-Agent", "test")
    if body is not None:
        request.data = json.dumps(body).encode()
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.mark.parametrize("token", [None, "wrong-token-of-the-same-length-12", ""])
def test_requests_without_the_token_get_401_and_change_nothing(
    toxiproxy_with_token: RunningServer, token: str | None
) -> None:
    owner = ToxiproxyClient(toxiproxy_with_token.base_url, timeout_s=5, token=TOKEN)
    owner.create_proxy("gateway_to_payment", "127.0.0.1:0", "127.0.0.1:9")
    before = owner.proxies()
    url = toxiproxy_with_token.base_url
    attempts = [
        ("POST", "/proxies/gateway_to_payment", {"upstream": "127.0.0.1:1"}),
        ("PATCH", "/proxies/gateway_to_payment", {"enabled": False}),
        ("POST", "/proxies/gateway_to_payment/toxics", {"type": "latency"}),
        ("POST", "/proxies", {"name": "x", "listen": "127.0.0.1:0", "upstream": "127.0.0.1:9"}),
        ("POST", "/populate", []),
        ("DELETE", "/proxies/gateway_to_payment", None),
        ("POST", "/reset", None),
        ("GET", "/proxies", None),
    ]
    for method, path, body in attempts:
        status, text = raw(url + path, method, body, token)
        assert status == 401, (method, path)
        error = json.loads(text)
        assert error["status"] == 401
        assert "Authorization: Bearer <token>" in error["error"]
        assert "MESH_TOXIPROXY_TOKEN" in error["error"]
    assert owner.proxies() == before
    # /version stays open for readiness probes
    assert raw(url + "/version", "GET")[0] == 200


def test_with_the_token_the_api_works(toxiproxy_with_token: RunningServer) -> None:
    client = ToxiproxyClient(toxiproxy_with_token.base_url, timeout_s=5, token=TOKEN)
    client.create_proxy("p", "127.0.0.1:0", "127.0.0.1:9")
    client.add_toxic("p", "latency", attributes={"latency": 5}, name="slow")
    assert client.update_proxy("p", upstream="127.0.0.1:10")["upstream"] == "127.0.0.1:10"
    assert [t["name"] for t in client.toxics("p")] == ["slow"]
    client.reset()
    assert client.toxics("p") == []
    with pytest.raises(ToxiproxyError) as caught:
        ToxiproxyClient(toxiproxy_with_token.base_url, timeout_s=5).proxies()
    assert caught.value.status == 401 and "Bearer" in caught.value.message


def test_without_a_token_configured_the_server_is_open(client: ToxiproxyClient) -> None:
    client.create_proxy("open", "127.0.0.1:0", "127.0.0.1:9")
    assert "open" in client.proxies()
