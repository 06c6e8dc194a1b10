"""Toxiproxy actions as chaostoxi's, but sending the mesh's admin token and failing loudly.

chaostoxi sends no token, so `mesh up`'s embedded Toxiproxy (admin auth on by default) answers
401 to each of its calls; chaostoxi logs that and goes on, and the run then reports a weakness
found under faults that were never applied. These actions take chaostoxi's arguments, send the
token mesh.json holds (real Toxiproxy ignores it) and stop the run when a fault cannot go on:
InterruptExecution, after the kill switch, so no half-applied fault stays behind.

create_proxy listens on loopback by default (chaostoxi's listens on 0.0.0.0, which the
embedded server refuses) and fails with the server's reason, not a bare AssertionError.
"""

from __future__ import annotations

import os
from typing import Any

from chaoslib.exceptions import ActivityFailed

from chaosgrpcmesh.actions import not_applied
from chaosgrpcmesh.mesh import target
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError

Configuration = dict[str, Any] | None


def _client(configuration: Configuration) -> ToxiproxyClient:
    tgt = target(configuration)
    if not tgt.toxiproxy:
        raise ActivityFailed("the mesh runs --direct: it has no Toxiproxy")
    return ToxiproxyClient(tgt.toxiproxy, token=tgt.admin_token)


def create_toxic(
    for_proxy: str,
    toxic_name: str,
    toxic_type: str,
    stream: str = "downstream",
    toxicity: float = 1.0,
    attributes: dict[str, Any] | None = None,
    configuration: Configuration = None,
) -> dict[str, Any]:
    """The toxic on `for_proxy` (chaostoxi's arguments); the toxic as the server made it."""
    try:
        client = _client(configuration)
        return client.add_toxic(for_proxy, toxic_type, stream, toxicity, attributes, toxic_name)
    except (ToxiproxyError, ActivityFailed) as err:
        raise not_applied(f"toxic {toxic_name} on {for_proxy}", err, configuration) from None


def disable_proxy(proxy_name: str, configuration: Configuration = None) -> dict[str, Any]:
    """`proxy_name` down (its listener closed, connections cut); the proxy as it is now."""
    try:
        return _client(configuration).disable(proxy_name)
    except (ToxiproxyError, ActivityFailed) as err:
        raise not_applied(f"proxy {proxy_name} down", err, configuration) from None


def delete_toxic(for_proxy: str, toxic_name: str, configuration: Configuration = None) -> bool:
    """The toxic removed: True; False when it was not there (a rollback after the method)."""
    try:
        _client(configuration).remove_toxic(for_proxy, toxic_name)
    except ToxiproxyError as err:
        if err.status == 404:
            return False
        raise ActivityFailed(f"toxic {toxic_name} on {for_proxy} not removed: {err}") from None
    return True


def enable_proxy(proxy_name: str, configuration: Configuration = None) -> bool:
    """`proxy_name` up again."""
    try:
        _client(configuration).enable(proxy_name)
    except ToxiproxyError as err:
        raise ActivityFailed(f"proxy {proxy_name} not enabled: {err}") from None
    return True


def create_proxy(
    proxy_name: str,
    upstream_host: str,
    upstream_port: int,
    listen_host: str = "127.0.0.1",
    listen_port: int = 0,
    enabled: bool = True,
    configuration: Configuration = None,
) -> dict[str, Any]:
    """A proxy `proxy_name` to upstream; its listen port is put in the configuration and the
    environment as `<proxy_name>_PORT` (as chaostoxi does). ActivityFailed carries the
    server's message when it refuses."""
    client = _client(configuration)
    try:
        proxy = client.create_proxy(
            proxy_name, f"{listen_host}:{listen_port}", f"{upstream_host}:{upstream_port}", enabled
        )
    except ToxiproxyError as err:
        raise ActivityFailed(f"Toxiproxy refused proxy {proxy_name!r}: {err}") from None
    port = str(proxy["listen"]).rsplit(":", 1)[-1]
    if configuration is not None:
        configuration[f"{proxy_name}_PORT"] = port
    os.environ[f"{proxy_name}_PORT"] = port
    return proxy


def delete_proxy(proxy_name: str, configuration: Configuration = None) -> bool:
    """`proxy_name` removed (create_proxy's rollback): True; False when it was not there."""
    try:
        _client(configuration).delete_proxy(proxy_name)
    except ToxiproxyError as err:
        if err.status == 404:
            return False
        raise ActivityFailed(f"proxy {proxy_name} not removed: {err}") from None
    return True
