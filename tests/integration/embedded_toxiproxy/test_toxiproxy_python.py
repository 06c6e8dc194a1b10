"""toxiproxy-python (PyPI `toxiproxy-python`) driving our server, quirks included.

Quirks: the API address lives in class globals (`APIConsumer.host/port`, set through
`Toxiproxy().update_api_consumer`), so it is restored after each test; `create()` lists proxies
first and raises ProxyExists itself; `populate()` is done client-side; 5xx errors are not raised;
`add_toxic` returns None and there is no toxic update.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

from tests.integration.embedded_toxiproxy.toxiproxy_helpers import (
    BOTH_SERVERS,
    ApiServer,
    connect,
    round_trip_ms,
)

pytestmark = [pytest.mark.timeout(20), BOTH_SERVERS]


@pytest.fixture
def tp(toxiproxy: ApiServer) -> Iterator[Toxiproxy]:
    saved = (APIConsumer.host, APIConsumer.port)
    server = Toxiproxy()
    server.update_api_consumer("127.0.0.1", int(toxiproxy.base_url.rsplit(":", 1)[1]))
    try:
        yield server
    finally:
        APIConsumer.host, APIConsumer.port = saved


def test_server_calls(tp: Toxiproxy, echo_port: int) -> None:
    assert tp.running()
    assert b'"version": "2.12.0"' in tp.version()
    proxy = tp.create(upstream=f"127.0.0.1:{echo_port}", name="echo")
    assert proxy.enabled is True and not proxy.listen.endswith(":0")
    assert set(tp.proxies()) == {"echo"}
    assert tp.get_proxy("echo").listen == proxy.listen
    with pytest.raises(ProxyExists):
        tp.create(upstream=f"127.0.0.1:{echo_port}", name="echo")
    assert tp.reset() is True
    tp.destroy_all()
    assert tp.proxies() == {}


def test_proxy_and_toxic_calls(tp: Toxiproxy, echo_port: int) -> None:
    proxy = tp.create(upstream=f"127.0.0.1:{echo_port}", name="echo", listen="127.0.0.1:0")
    port = int(proxy.listen.rsplit(":", 1)[1])
    proxy.add_toxic(type="latency", attributes={"latency": 60})
    toxics = proxy.toxics()
    assert list(toxics) == ["latency_downstream"]
    assert toxics["latency_downstream"].attributes == {"latency": 60, "jitter": 0}
    with connect(port) as sock:
        assert round_trip_ms(sock) >= 50
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(type="nope")
    with pytest.raises(ProxyExists):
        proxy.add_toxic(type="latency")
    assert proxy.destroy_toxic("latency_downstream") is True
    with pytest.raises(NotFound):
        proxy.destroy_toxic("latency_downstream")
    with proxy.down():
        with pytest.raises(ConnectionRefusedError):
            connect(port)
    with connect(port) as sock:
        assert round_trip_ms(sock) < 50
    assert proxy.destroy() is True


def test_client_side_populate(tp: Toxiproxy, echo_port: int) -> None:
    upstream = f"127.0.0.1:{echo_port}"
    created = tp.populate([{"name": "a", "upstream": upstream, "listen": "127.0.0.1:0"}])
    assert [p.name for p in created] == ["a"]
    listen = created[0].listen
    # Same listen and upstream: kept, so nothing is created this time.
    assert tp.populate([{"name": "a", "upstream": upstream, "listen": listen}]) == []
