"""The kv example as the docs show it: the quoted client and server are the files, the stubs
are generated from kv.proto as committed, the client runs against the server, and the pipeline
reads each method's idempotency from the proto (Delete, declaring none, is the trap)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from examples.kv.client import POLICY, kv_channel, main
from grpc_aio_resilience import EventBus, ResiliencePolicyWarning, describe, pipeline_of
from tests.examples.kv_harness import kv_serving
from tools.codegen import stamp_floor

ROOT = Path(__file__).resolve().parents[2]
KV = ROOT / "examples" / "kv"
METHOD = "/kvexample.v1.KeyValue/"


@pytest.mark.parametrize("name", ["client.py", "server.py"])
def test_the_docs_quote_the_example_whole(name: str) -> None:
    source = (KV / name).read_text(encoding="utf-8")
    page = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    assert f"```python\n{source}```\n" in page
    assert len(source.splitlines()) <= 31


def test_the_committed_stubs_are_generated_from_kv_proto(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"-I{ROOT}",
        f"--python_out={tmp_path}",
        f"--grpc_python_out={tmp_path}",
        f"--pyi_out={tmp_path}",
        str(KV / "kv.proto"),
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=60)
    fresh = sorted((tmp_path / "examples" / "kv").iterdir())
    assert [f.name for f in fresh] == ["kv_pb2.py", "kv_pb2.pyi", "kv_pb2_grpc.py"]
    for f in fresh:
        fresh_text = stamp_floor(f.read_text(encoding="utf-8"))  # tools/codegen.py: why
        committed = (KV / f.name).read_text(encoding="utf-8")
        assert committed == fresh_text, f"{f.name} is stale: regenerate it"


async def test_the_pipeline_retries_what_the_proto_declares_and_names_the_trap() -> None:
    with pytest.warns() as caught:  # once per process: another test may have had it
        channel = kv_channel("127.0.0.1:1", POLICY, EventBus())
    assert all(isinstance(w.message, ResiliencePolicyWarning) for w in caught)
    try:
        described = describe(pipeline_of(channel))
    finally:
        await channel.close()
    assert described.strategy("retry").methods == {
        f"{METHOD}Get": "up to 3 attempts",
        f"{METHOD}Put": "up to 3 attempts",
        f"{METHOD}Add": "only with idempotency_key set: up to 3 attempts",
        f"{METHOD}Delete": "off: no idempotency declared",
    }
    assert [(t.kind, t.method) for t in described.traps] == [("never_retried", f"{METHOD}Delete")]


async def test_the_client_runs_against_the_server(capsys: pytest.CaptureFixture[str]) -> None:
    async with kv_serving() as address:
        await main(address)
    out = capsys.readouterr().out
    assert 'value: "hello"' in out
    assert "CallFinished(dependency='kv', method='/kvexample.v1.KeyValue/Get', outcome='OK'" in out
