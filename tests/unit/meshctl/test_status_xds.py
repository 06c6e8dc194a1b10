"""`mesh status` under `mesh up --xds`: the plane's A33 faults on the faults line, and one line
per xDS client from its CSDS dump, a resource it did not ACK named with the client's error."""

from __future__ import annotations

from typing import Any

from grpc_resilience_mesh.cli.status import csds_lines, fault_lines
from grpc_resilience_mesh.console.csds import Resource, summary


def test_the_faults_line_shows_an_xds_fault_with_who_set_it() -> None:
    xds_fault = {"method": "Recommend", "abort_percent": 30.0, "abort_code": "UNAVAILABLE",
                 "delay_percent": 100.0, "delay_s": 0.2, "owner": "mesh fault"}  # fmt: skip
    edge: dict[str, Any] = {"name": "gateway_to_recommendation", "toxics": [], "app_faults": [],
                            "proxy": None, "xds_faults": [xds_fault]}  # fmt: skip
    assert fault_lines({"edges": [edge]}) == [
        "gateway_to_recommendation: xDS Recommend UNAVAILABLE 30% +0.2s 100% (mesh fault)"
    ]


def test_each_client_is_one_line_and_a_nacked_resource_is_named_with_its_error() -> None:
    held = [
        Resource("listeners", "profile", "3", "ACKED", "", {}),
        Resource("clusters", "profile", "3", "ACKED", "", {}),
        Resource("listeners", "payment", "2", "NACKED", "route: no cluster", {}),
    ]
    lines = csds_lines({"gateway": summary(held), "recommendation": {"error": "CSDS at x: DOWN"}})
    assert lines == [
        "xDS clients (CSDS):",
        "  gateway: ACKED version 3: clusters profile; listeners payment, profile; "
        "[red]listeners payment NACKED[/red] (route: no cluster)",
        "  [yellow]recommendation: CSDS at x: DOWN[/yellow]",
    ]
    assert csds_lines(None) == []
