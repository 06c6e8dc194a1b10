"""Faults and counters with replicas: an edge's fault reaches every replica's proxy, a kill
fault names a process of the mesh, and a replica's counters add up under its service."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from grpc_resilience_mesh.chaos.experiment.model import KillFault, ToxicFault
from grpc_resilience_mesh.chaos.run.faults import Injector, proxies_of
from grpc_resilience_mesh.client.counters import Snapshot
from grpc_resilience_mesh.services import settings


def test_a_fault_on_an_edge_reaches_every_replicas_proxy_and_a_proxy_name_one() -> None:
    assert proxies_of("gateway_to_profile") == ["gateway_to_profile", "gateway_to_profile-2"]
    assert proxies_of("gateway_to_profile-2") == ["gateway_to_profile-2"]
    assert proxies_of("gateway_to_payment") == ["gateway_to_payment"]


def test_a_toxic_may_name_one_replicas_proxy_and_a_kill_a_process_of_the_mesh() -> None:
    ToxicFault(type="toxic", edge="recommendation_to_profile-2", toxic="latency")
    KillFault(type="kill", service="profile-2")
    with pytest.raises(ValidationError, match="did you mean 'profile-2'"):
        KillFault(type="kill", service="profile-3")


class FakeToxiproxy:
    def __init__(self, replica_proxies: bool = True) -> None:
        self.toxics: list[tuple[str, str]] = []
        self.replica_proxies = replica_proxies

    def proxies(self) -> dict[str, Any]:
        names = ["gateway_to_recommendation", "gateway_to_recommendation-2"]
        return {n: {} for n in names[: 2 if self.replica_proxies else 1]}

    def add_toxic(self, proxy: str, toxic: str, **_: Any) -> None:
        self.toxics.append((proxy, toxic))


class FakeProcesses:
    def __init__(self) -> None:
        self.log: list[str] = []

    def kill(self, name: str) -> int:
        self.log.append(f"kill {name}")
        return -9

    def restart_service(self, name: str) -> int:
        self.log.append(f"restart {name}")
        return 1


def test_the_injector_puts_an_edge_toxic_on_both_proxies_and_restarts_what_it_killed() -> None:
    client, processes = FakeToxiproxy(), FakeProcesses()
    injector = Injector(client, {}, processes)  # type: ignore[arg-type]
    toxic = ToxicFault(type="toxic", edge="gateway_to_recommendation", toxic="latency")
    kill = KillFault(type="kill", service="recommendation-2")

    async def run() -> None:
        await injector.set(0, toxic, True)
        await injector.set(1, kill, True)
        client.reset = lambda: None  # type: ignore[attr-defined]
        await injector.reset_all()  # the kill switch brings the killed process back

    asyncio.run(run())
    assert client.toxics == [
        ("gateway_to_recommendation", "latency"),
        ("gateway_to_recommendation-2", "latency"),
    ]
    assert processes.log == ["kill recommendation-2", "restart recommendation-2"]
    assert injector.killed == set()


def test_where_one_proxy_fronts_every_replica_the_edges_toxic_goes_on_that_one() -> None:
    # deploy/k8s's chaos overlay: one proxy per edge, to a headless Service over the replicas.
    client = FakeToxiproxy(replica_proxies=False)
    injector = Injector(client, {})  # type: ignore[arg-type]
    toxic = ToxicFault(type="toxic", edge="gateway_to_recommendation", toxic="latency")
    asyncio.run(injector.set(0, toxic, True))
    assert client.toxics == [("gateway_to_recommendation", "latency")]


def key(service: str, **labels: str) -> tuple[str, str, frozenset[tuple[str, str]]]:
    return (service, "mesh_server_calls_total", frozenset(labels.items()))


def test_replicas_count_as_their_service_and_a_restarted_one_counts_from_zero() -> None:
    before = Snapshot({key("profile", code="OK"): 100.0, key("profile-2", code="OK"): 80.0})
    # profile-2 was killed and started again: its counter began again at 0.
    after = Snapshot({key("profile", code="OK"): 150.0, key("profile-2", code="OK"): 30.0})
    assert (after - before).total("mesh_server_calls_total", "profile") == 50.0 + 30.0


def test_a_dependency_address_may_list_replicas() -> None:
    assert settings.addresses(" 127.0.0.1:1, toxiproxy:2 ") == "127.0.0.1:1,toxiproxy:2"
    with pytest.raises(settings.RuleError):
        settings.addresses("127.0.0.1:1,")
