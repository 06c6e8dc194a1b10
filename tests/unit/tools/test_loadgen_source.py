"""grpc_resilience_mesh/loadgen/go (the Go load generator) has no generated code: its protobuf field
numbers, ChargeStatus names, status code names, retryable codes and pushback key are written out in
load.go. Each must agree with the .proto files (through the generated descriptors) and with
grpc_aio_resilience, or its records would quietly differ from the Python generator's."""

from __future__ import annotations

import re
from pathlib import Path

import grpc

from grpc_aio_resilience import intake
from grpc_aio_resilience.classify import RETRYABLE_CODES
from grpc_aio_resilience.errors import PUSHBACK_KEY
from grpc_resilience_mesh.loadgen.generator import METHODS, TICK_S
from grpc_resilience_mesh.services.v1 import gateway_pb2, payment_pb2

SOURCE = (
    Path(__file__).resolve().parents[3] / "grpc_resilience_mesh" / "loadgen" / "go" / "load.go"
).read_text()


def go_strings(variable: str) -> list[str]:
    """The string literals of `var VARIABLE = ...{...}` in load.go, in order."""
    found = re.search(rf"^var {variable} = [^{{]*\{{(.*?)\}}", SOURCE, re.S | re.M)
    assert found, f"var {variable} not found in load.go"
    return re.findall(r'"([^"]*)"', found.group(1))


def test_every_field_number_is_the_protos() -> None:
    fields = re.findall(r"^\s*field\w+\s*=\s*(\d+)\s*// proto: (.+)$", SOURCE, re.M)
    checked = set()
    for number, names in fields:
        for name in names.split():
            message, field = name.split(".")
            descriptor = gateway_pb2.DESCRIPTOR.message_types_by_name[message]
            assert descriptor.fields_by_name[field].number == int(number), name
            checked.add(name)
    assert {
        "GetHomeRequest.user_id",
        "CheckoutRequest.amount_cents",
        "CheckoutRequest.currency",
        "CheckoutRequest.idempotency_key",
        "GetHomeResponse.degraded",
        "Degradation.part",
        "Degradation.served_by",
        "CheckoutResponse.charge_id",
        "CheckoutResponse.status",
    } <= checked


def test_charge_status_names_are_the_enums() -> None:
    names = [
        payment_pb2.ChargeStatus.Name(number).removeprefix("CHARGE_STATUS_")
        for number in sorted(payment_pb2.ChargeStatus.values())
    ]
    assert go_strings("chargeStatus") == names
    assert sorted(payment_pb2.ChargeStatus.values()) == list(range(len(names)))


def test_status_code_names_are_grpcs() -> None:
    by_number = sorted(grpc.StatusCode, key=lambda code: code.value[0])
    assert go_strings("codeNames") == [code.name for code in by_number]


def test_retryable_codes_and_metadata_keys_are_the_meshs() -> None:
    assert set(go_strings("retryable")) == {code.name for code in RETRYABLE_CODES}
    assert f'const pushbackKey = "{PUSHBACK_KEY}"' in SOURCE
    assert f'const timeoutKey = "{intake.TIMEOUT_KEY}"' in SOURCE


def test_methods_and_tick_are_the_python_generators() -> None:
    tick = re.search(r"^const tick = (\d+) \* time\.Millisecond", SOURCE, re.M)
    assert tick and int(tick.group(1)) / 1000 == TICK_S
    found = re.search(r"^var methods = map\[string\]string\{(.*?)\}", SOURCE, re.M)
    assert found
    assert dict(re.findall(r'"(\w+)": "([^"]+)"', found.group(1))) == METHODS
