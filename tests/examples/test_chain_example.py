"""The chain example as a user runs it: stubs generated from chain.proto as committed, three
processes wired by the environment, Get and Watch down the chain, reflection describing what a
load generator needs, back's fault admin, and the kv server on the address it is given."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import grpc.aio
import pytest

from examples.chain import chain_pb2, chain_pb2_grpc
from examples.kv import kv_pb2, kv_pb2_grpc
from grpc_resilience_mesh.chaos.topology.app_faults import clear_faults, set_faults
from grpc_resilience_mesh.launch.ports import free_port
from grpc_resilience_mesh.loadgen.any_method import resolve_method
from tests.examples.chain_harness import ROOT, Chain, chain_running, health, started
from tools.codegen import stamp_floor

CHAIN = ROOT / "examples" / "chain"
KV = ROOT / "examples" / "kv"
pytestmark = pytest.mark.timeout(120)


def protoc(tmp_path: Path, proto: Path, *outputs: str) -> None:
    command = [sys.executable, "-m", "grpc_tools.protoc", f"-I{ROOT}", *outputs, str(proto)]
    subprocess.run(command, check=True, capture_output=True, timeout=60, cwd=tmp_path)


def test_the_committed_stubs_are_generated_from_chain_proto(tmp_path: Path) -> None:
    outputs = (f"--{kind}_out={tmp_path}" for kind in ("python", "grpc_python", "pyi"))
    protoc(tmp_path, CHAIN / "chain.proto", *outputs)
    fresh = sorted((tmp_path / "examples" / "chain").iterdir())
    assert [f.name for f in fresh] == ["chain_pb2.py", "chain_pb2.pyi", "chain_pb2_grpc.py"]
    for f in fresh:
        fresh_text = stamp_floor(f.read_text(encoding="utf-8"))  # tools/codegen.py: why
        committed = (CHAIN / f.name).read_text(encoding="utf-8")
        assert committed == fresh_text, f"{f.name} is stale: regenerate it"


def test_the_kv_descriptor_set_is_compiled_from_kv_proto(tmp_path: Path) -> None:
    protoc(tmp_path, KV / "kv.proto", f"--descriptor_set_out={tmp_path / 'kv.binpb'}")
    assert (KV / "kv.binpb").read_bytes() == (tmp_path / "kv.binpb").read_bytes(), (
        "examples/kv/kv.binpb is stale: regenerate it (examples/kv/experiments/slow-link.yaml)"
    )


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    with chain_running(tmp_path_factory.mktemp("chain")) as running:
        yield running


async def test_a_get_goes_down_the_chain_and_back(chain: Chain) -> None:
    assert [health(a) for a in (chain.front, chain.middle, chain.back)] == ["SERVING"] * 3
    async with grpc.aio.insecure_channel(chain.front) as channel:
        reply = await chain_pb2_grpc.FrontStub(channel).Get(
            chain_pb2.GetRequest(key="k-1"), timeout=2.0
        )
    assert (reply.key, reply.value) == ("k-1", "value of k-1")
    assert list(reply.path) == ["front", "middle", "back"]


async def test_watch_streams_each_update_read_through_the_chain(chain: Chain) -> None:
    async with grpc.aio.insecure_channel(chain.front) as channel:
        stream = chain_pb2_grpc.FrontStub(channel).Watch(
            chain_pb2.WatchRequest(key="w", count=4), timeout=3.0
        )
        updates = [u async for u in stream]
    assert [(u.seq, u.reply.value) for u in updates] == [(i, f"value of w#{i}") for i in range(4)]
    assert {tuple(u.reply.path) for u in updates} == {("front", "middle", "back")}


async def test_reflection_tells_a_load_generator_the_methods(chain: Chain) -> None:
    watch = await resolve_method(chain.front, "/chain.v1.Front/Watch")
    get = await resolve_method(chain.middle, "/chain.v1.Middle/Get")
    assert (watch.server_streaming, get.server_streaming) == (True, False)
    assert watch.request_type.DESCRIPTOR.full_name == "chain.v1.WatchRequest"


async def test_backs_fault_admin_fails_its_answers_until_cleared(chain: Chain) -> None:
    rule = {"method": "/chain.v1.Back/Get", "code": "FAILED_PRECONDITION", "rate": 1.0}
    async with grpc.aio.insecure_channel(chain.front) as channel:
        front = chain_pb2_grpc.FrontStub(channel)
        assert await set_faults(chain.fault_admin, [rule]) != []
        try:
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                await front.Get(chain_pb2.GetRequest(key="f"), timeout=2.0)
        finally:
            assert await clear_faults(chain.fault_admin) == []
        reply = await front.Get(chain_pb2.GetRequest(key="f"), timeout=2.0)
    assert failed.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert list(reply.path) == ["front", "middle", "back"]


def kv_answers(addr: str) -> bool:
    with grpc.insecure_channel(addr) as channel:
        try:
            kv_pb2_grpc.KeyValueStub(channel).Get(kv_pb2.GetRequest(key="x"), timeout=0.5)
        except grpc.RpcError:
            return False
    return True


def test_the_kv_server_listens_on_listen_addr(tmp_path: Path) -> None:
    addr = f"127.0.0.1:{free_port()}"
    env = {"LISTEN_ADDR": addr}
    with started("examples.kv.server", env, tmp_path / "kv.log", ready=kv_answers):
        assert kv_answers(addr)
