"""`mesh up`'s banner is whole at 80 columns: every address readable, none cut."""

from __future__ import annotations

from rich.console import Console

from grpc_resilience_mesh.cli.up import proxy_table, state_table
from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.services.topology import INSTANCES, PROXIES


def test_the_banner_tables_fit_80_columns_with_every_address_whole() -> None:
    port = iter(range(40000, 41000))
    state = MeshState(
        gateway="127.0.0.1:50051",
        toxiproxy="http://127.0.0.1:48474",
        services={
            s.name: {
                "listen": f"127.0.0.1:{next(port)}",
                "admin": f"127.0.0.1:{next(port)}",
                "metrics": f"http://127.0.0.1:{next(port)}/metrics",
            }
            for s in INSTANCES
        },
        proxies={
            p.name: {"listen": f"127.0.0.1:{next(port)}", "upstream": f"127.0.0.1:{next(port)}"}
            for p in PROXIES
        },
        pids={s.name: 4_000_000 for s in INSTANCES},
        policy="retry-only",
        state_dir="var",
    )
    out = Console(width=80, record=True)
    out.print(state_table(state))
    out.print(proxy_table(state))
    text = out.export_text()
    assert "…" not in text, text
    for addrs in state.services.values():
        assert addrs["admin"] in text and addrs["metrics"].removesuffix("/metrics")[7:] in text
    assert "recommendation-2" in text and "http://ADDR/metrics" in text
