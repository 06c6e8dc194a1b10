"""create_proxy as chaostoxi's, but on loopback by default, failing with the server's reason.

chaostoxi.proxy.actions.create_proxy listens on 0.0.0.0 unless told otherwise, which the
mesh's embedded Toxiproxy refuses (400: a proxy would be reachable from other hosts), and it
turns every refusal into a bare AssertionError, the server's reason in a debug line only.
"""

from __future__ import annotations

import os
from typing import Any

from chaoslib.exceptions import ActivityFailed

from chaosmesh.mesh import target
from embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError

Configuration = dict[str, Any] | None


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
    tgt = target(configuration)
    if not tgt.toxiproxy:
        raise ActivityFailed("the mesh runs --direct: it has no Toxiproxy")
    client = ToxiproxyClient(tgt.toxiproxy, token=tgt.admin_token)
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
