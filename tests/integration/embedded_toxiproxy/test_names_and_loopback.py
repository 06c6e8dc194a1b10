"""Our two limits beyond Toxiproxy's: names that fit a URL, and proxies listening on loopback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError
from grpc_resilience_mesh.embedded_toxiproxy.decoding import MAX_NAME_BYTES
from tests.integration.embedded_toxiproxy.toxiproxy_helpers import (
    RunningServer,
    connect,
    error_of,
    http,
    listen_port,
    round_trip_ms,
)

pytestmark = pytest.mark.timeout(30)


def _own_non_loopback_ip() -> str | None:
    """An address of this machine beyond loopback, if it has one (nothing is sent)."""
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
    except OSError:
        infos = []
    for info in infos:
        address = str(info[4][0])
        if not address.startswith("127."):
            return address
    return None


def test_the_longest_names_can_be_created_used_and_deleted(
    client: ToxiproxyClient, echo_port: int
) -> None:
    # Every byte of these names percent-encodes to three: the worst case for the URL's length.
    proxy_name = "é" * (MAX_NAME_BYTES // 2)
    toxic_name = "/" * MAX_NAME_BYTES
    proxy = client.create_proxy(proxy_name, "127.0.0.1:0", f"127.0.0.1:{echo_port}")
    client.add_toxic(proxy_name, "latency", attributes={"latency": 1}, name=toxic_name)
    assert client.get_toxic(proxy_name, toxic_name)["name"] == toxic_name
    with connect(listen_port(proxy)) as sock:
        round_trip_ms(sock)
    client.remove_toxic(proxy_name, toxic_name)
    client.delete_proxy(proxy_name)
    assert client.proxies() == {}


@pytest.mark.parametrize("size", [MAX_NAME_BYTES + 1, 9000])
def test_a_proxy_name_too_long_for_a_url_is_refused(toxiproxy: RunningServer, size: int) -> None:
    name = "x" * size
    body = {"name": name, "listen": "127.0.0.1:0", "upstream": "127.0.0.1:1"}
    status, _, data = http(toxiproxy, "POST", "/proxies", body)
    assert (status, error_of(status, data)["error"]) == (
        400,
        f"name too long: proxy name is {size} bytes (UTF-8); at most {MAX_NAME_BYTES}, "
        "so that it fits in a URL",
    )
    status, _, data = http(toxiproxy, "POST", "/populate", [body])
    assert status == 400 and json.loads(data)["proxies"] is None
    assert json.loads(http(toxiproxy, "GET", "/proxies")[2]) == {}


def test_a_toxic_name_too_long_for_a_url_is_refused(client: ToxiproxyClient) -> None:
    client.create_proxy("p", "127.0.0.1:0", "127.0.0.1:1")
    name = "é" * (MAX_NAME_BYTES // 2) + "x"
    with pytest.raises(ToxiproxyError) as caught:
        client.add_toxic("p", "latency", name=name)
    assert caught.value.status == 400
    assert caught.value.message.startswith("name too long: toxic name is 1025 bytes")
    assert client.toxics("p") == []


NON_LOOPBACK = ["0.0.0.0:0", "[::]:0", "", ":0", "198.51.100.7:0"]
if (own_ip := _own_non_loopback_ip()) is not None:
    NON_LOOPBACK.append(f"{own_ip}:0")


@pytest.mark.parametrize("listen", NON_LOOPBACK)
def test_a_non_loopback_listen_is_refused_by_default(toxiproxy: RunningServer, listen: str) -> None:
    for enabled in (True, False):
        body = {"name": "p", "listen": listen, "upstream": "127.0.0.1:1", "enabled": enabled}
        status, _, data = http(toxiproxy, "POST", "/proxies", body)
        assert status == 400, data
        message = error_of(400, data)["error"]
        assert message.startswith(f"listen address is not loopback: {listen!r} ")
        assert "--allow-non-loopback" in message
        # chaostoxi's create_proxy defaults to 0.0.0.0: the message names its argument.
        fix = "chaostoxi create_proxy listens on 0.0.0.0 unless given listen_host: 127.0.0.1"
        assert fix in message
        status, _, data = http(toxiproxy, "POST", "/populate", [body])
        assert status == 400 and json.loads(data)["proxies"] is None
    assert json.loads(http(toxiproxy, "GET", "/proxies")[2]) == {}


def test_moving_a_proxy_off_loopback_is_refused_and_changes_nothing(
    toxiproxy: RunningServer, echo_port: int
) -> None:
    body = {"name": "p", "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{echo_port}"}
    status, _, data = http(toxiproxy, "POST", "/proxies", body)
    assert status == 201
    before = json.loads(data)
    status, _, data = http(toxiproxy, "PATCH", "/proxies/p", {"listen": "0.0.0.0:0"})
    assert status == 400 and error_of(400, data)["error"].startswith("listen address is not")
    assert json.loads(http(toxiproxy, "GET", "/proxies/p")[2]) == before
    with connect(listen_port(before)) as sock:
        round_trip_ms(sock)


@pytest.mark.parametrize("listen", ["127.0.0.1:0", "127.0.0.2:0", "localhost:0", "[::1]:0"])
def test_loopback_addresses_are_accepted(toxiproxy: RunningServer, listen: str) -> None:
    if listen.startswith("[::1]") and not socket.has_ipv6:
        pytest.skip("no IPv6")
    body = {"name": "p", "listen": listen, "upstream": "127.0.0.1:1"}
    status, _, data = http(toxiproxy, "POST", "/proxies", body)
    assert status == 201, data


def test_the_explicit_option_allows_every_interface(
    toxiproxy_any_interface: RunningServer, echo_port: int
) -> None:
    body = {"name": "p", "listen": "0.0.0.0:0", "upstream": f"127.0.0.1:{echo_port}"}
    status, _, data = http(toxiproxy_any_interface, "POST", "/proxies", body)
    assert status == 201, data
    proxy = json.loads(data)
    assert proxy["listen"].startswith("0.0.0.0:")
    with connect(listen_port(proxy)) as sock:
        round_trip_ms(sock)


def test_the_command_line_flag_allows_every_interface() -> None:
    command = [sys.executable, "-m", "grpc_resilience_mesh.embedded_toxiproxy", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--allow-non-loopback"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        # serve_forever prints the API's URL once it is listening.
        url = process.stdout.readline().strip().rsplit(" ", 1)[-1]
        assert url.startswith("http://127.0.0.1:"), url
        client = ToxiproxyClient(url, timeout_s=5.0)
        assert client.create_proxy("p", "0.0.0.0:0", "127.0.0.1:1")["listen"].startswith("0.0.0.0:")
    finally:
        process.terminate()
        process.wait(10)
