"""The ports of the embedded mesh: the topology's defaults, or free ones picked all at once."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from mesh.topology import INSTANCES, PEERS, PROXIES, TOXIPROXY_API_PORT


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` distinct free ports on 127.0.0.1 (all held open until every one is chosen)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            sockets.append(s)
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


@dataclass
class Ports:
    """Every port the embedded mesh uses; `auto()` picks free ones (for tests and CI)."""

    listen: dict[str, int]
    admin: dict[str, int]
    metrics: dict[str, int]
    proxies: dict[str, int]
    toxiproxy_api: int

    @classmethod
    def default(cls, gateway_port: int | None = None) -> Ports:
        listen = {s.name: s.port for s in (*INSTANCES, *PEERS)}
        if gateway_port:
            listen["gateway"] = gateway_port
        return cls(
            listen=listen,
            admin={s.name: s.admin_port for s in INSTANCES},
            metrics={s.name: s.metrics_port for s in INSTANCES},
            proxies={p.name: p.port for p in PROXIES},
            toxiproxy_api=TOXIPROXY_API_PORT,
        )

    @classmethod
    def auto(cls) -> Ports:
        """Free ports, all different: every one stays bound until all are picked (ports picked
        one at a time can come back twice, and two proxies on one port break an edge)."""
        names = [
            *(("listen", s.name) for s in (*INSTANCES, *PEERS)),
            *(("admin", s.name) for s in INSTANCES),
            *(("metrics", s.name) for s in INSTANCES),
            *(("proxies", p.name) for p in PROXIES),
            ("api", "toxiproxy"),
        ]
        ports = dict(zip(names, free_ports(len(names)), strict=True))
        table: dict[str, dict[str, int]] = {"listen": {}, "admin": {}, "metrics": {}, "proxies": {}}
        for (kind, name), port in ports.items():
            if kind != "api":
                table[kind][name] = port
        return cls(**table, toxiproxy_api=ports[("api", "toxiproxy")])
