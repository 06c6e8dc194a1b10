"""`mesh call` sends a traceparent of its own and prints that trace id, in text and in JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from typer.testing import CliRunner

from grpc_resilience_mesh.cli.app import app
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc


class _Gateway(gateway_pb2_grpc.GatewayServicer):
    def __init__(self) -> None:
        self.traceparents: list[str] = []

    def GetHome(self, request: Any, context: grpc.ServicerContext) -> Any:
        self.traceparents.append(dict(context.invocation_metadata()).get("traceparent", ""))
        return gateway_pb2.GetHomeResponse()


@pytest.fixture
def gateway() -> Iterator[tuple[str, _Gateway]]:
    servicer = _Gateway()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    gateway_pb2_grpc.add_GatewayServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", servicer
    finally:
        server.stop(grace=None)


def test_json_carries_the_trace_id_the_gateway_received(
    gateway: tuple[str, _Gateway], tmp_path: Path
) -> None:
    addr, servicer = gateway
    out = tmp_path / "home.json"
    to_stdout = CliRunner().invoke(
        app, ["call", "home", "--user", "u-1", "--addr", addr, "--json", "-"]
    )
    to_file = CliRunner().invoke(
        app, ["call", "home", "--user", "u-1", "--addr", addr, "--json", str(out)]
    )
    assert to_stdout.exit_code == 0 and to_file.exit_code == 0, to_stdout.output + to_file.output
    sent = [tp.split("-")[1] for tp in servicer.traceparents]
    assert json.loads(to_stdout.stdout)["trace_id"] == sent[0]
    assert json.loads(out.read_text())["trace_id"] == sent[1]
    assert len(set(sent)) == 2 and all(len(t) == 32 for t in sent)


def test_text_output_names_the_trace(gateway: tuple[str, _Gateway]) -> None:
    addr, servicer = gateway
    result = CliRunner().invoke(
        app, ["call", "home", "--user", "u-0001", "--addr", addr], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    (traceparent,) = servicer.traceparents
    assert f"trace {traceparent.split('-')[1]}" in result.output


class _FatedGateway(gateway_pb2_grpc.GatewayServicer):
    """Answers u-0001 with a fate trailer; sheds anyone else, as the gateway would say it."""

    def GetHome(self, request: Any, context: grpc.ServicerContext) -> Any:
        if request.user_id != "u-0001":
            context.set_trailing_metadata((("resilience-fate", "shed(profile:limit)"),))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "profile shed the call")
        context.set_trailing_metadata((("resilience-fate", "ok-after-retry(1)"),))
        return gateway_pb2.GetHomeResponse()


def test_mesh_call_says_the_fate_of_its_call() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    gateway_pb2_grpc.add_GatewayServicer_to_server(_FatedGateway(), server)
    addr = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    try:
        ok = CliRunner().invoke(
            app, ["call", "home", "--user", "u-0001", "--addr", addr], env={"COLUMNS": "200"}
        )
        shed = CliRunner().invoke(
            app, ["call", "home", "--user", "u-0002", "--addr", addr], env={"COLUMNS": "200"}
        )
    finally:
        server.stop(grace=None)
    assert ok.exit_code == 0 and "fate ok-after-retry(1)" in ok.output, ok.output
    assert shed.exit_code == 1 and "fate: shed(profile:limit)" in shed.output, shed.output
