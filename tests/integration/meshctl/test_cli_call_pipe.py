"""`mesh call home 2>&1 | cat`: the answer (stdout) and the timing note (stderr) come out as
whole lines, the note after the answer (issue 46 saw "degraded: noneanswered in 16 ms")."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc


class _Gateway(gateway_pb2_grpc.GatewayServicer):
    def GetHome(self, request: Any, context: grpc.ServicerContext) -> Any:
        return gateway_pb2.GetHomeResponse()

    def Checkout(self, request: Any, context: grpc.ServicerContext) -> Any:
        return gateway_pb2.CheckoutResponse(charge_id="ch_1")


@pytest.fixture
def gateway() -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    gateway_pb2_grpc.add_GatewayServicer_to_server(_Gateway(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)


def merged_output(tmp_path: Path, *args: str) -> list[str]:
    """The lines of `mesh call ARGS 2>&1`, read from a pipe as `| cat` reads them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MESH_")}
    result = subprocess.run(
        [sys.executable, "-m", "grpc_resilience_mesh.cli", "call", *args],
        cwd=tmp_path,  # no var/mesh.json here
        env={**env, "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout
    return result.stdout.splitlines()


def test_home_answer_then_the_note_each_on_its_own_line(gateway: str, tmp_path: Path) -> None:
    lines = merged_output(tmp_path, "home", "--user", "u-0001", "--addr", gateway)
    assert "degraded: none" in lines, lines
    assert lines[-1].startswith("answered in "), lines
    assert lines.index("degraded: none") == len(lines) - 2, lines


def test_checkout_answer_then_the_note(gateway: str, tmp_path: Path) -> None:
    args = ("checkout", "--user", "u-0001", "--amount", "1", "--key", "k", "--addr", gateway)
    lines = merged_output(tmp_path, *args)
    assert lines[-3].startswith("charge ch_1: "), lines
    assert lines[-2] == "idempotency key: k", lines
    assert lines[-1].startswith("answered in "), lines
