"""A method resolved from .proto files (compiled by grpcio-tools) for a server without
reflection: the kv example's own kv.proto, a load through it, and each way it can go wrong named
(a file that does not compile, no grpcio-tools, both protos and a descriptor set)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from examples.kv.store import KeyValueStore
from grpc_resilience_mesh.loadgen.any_method import (
    LoadInputError,
    LoadShape,
    render_requests,
    resolve_method,
    run_load,
)
from tests.integration.loadgen.any_method_servers import kv_with_reflection

ROOT = Path(__file__).resolve().parents[3]
KV_PROTO = ROOT / "examples" / "kv" / "kv.proto"
NOWHERE = "127.0.0.1:1"  # never asked: the files say everything


async def test_the_kv_proto_resolves_a_method_of_a_server_without_reflection() -> None:
    store = KeyValueStore()
    async with kv_with_reflection(store, reflect=False) as target:
        with pytest.raises(
            LoadInputError, match=r"serve gRPC reflection: give a descriptor_set, or protos"
        ):
            await resolve_method(target, "/kvexample.v1.KeyValue/Put", timeout_s=2.0)
        info = await resolve_method(target, "/kvexample.v1.KeyValue/Put", protos=[KV_PROTO])
        calls = render_requests(info, {"key": "k-{n}", "value": "v{n}"}, {}, 5)
        records = await run_load(target, info, calls, LoadShape(5, 2, 2.0, 10.0))
    assert info.request_type.DESCRIPTOR.full_name == "kvexample.v1.PutRequest"
    assert [r.code for r in records] == ["OK"] * 5
    assert store.values == {f"k-{i}": f"v{i}" for i in range(5)}


async def test_an_include_path_lets_a_file_be_named_by_its_import_path(tmp_path: Path) -> None:
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "money.proto").write_text(
        'syntax = "proto3";\npackage acme;\nmessage Money { int64 units = 1; }\n'
    )
    (tmp_path / "wallet.proto").write_text(
        'syntax = "proto3";\npackage acme;\nimport "acme/money.proto";\n'
        'import "google/protobuf/empty.proto";\n'
        "service Wallet { rpc Pay(Money) returns (google.protobuf.Empty); }\n"
    )
    info = await resolve_method(
        NOWHERE, "acme.Wallet/Pay", protos=[tmp_path / "wallet.proto"], proto_path=[tmp_path]
    )
    [(request, _)] = render_requests(info, {"units": "4{n}"}, {}, 1)
    assert request.DESCRIPTOR.file.name == "acme/money.proto" and request.units == 40


async def test_a_file_that_does_not_compile_is_refused_with_protoc_s_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.proto"
    broken.write_text('syntax = "proto3";\nmessage M { strin key = 1; }\n')
    with pytest.raises(LoadInputError, match=r"protoc refused them: .*broken\.proto:2:\d+: "):
        await resolve_method(NOWHERE, "/x.S/M", protos=[broken])


async def test_an_unknown_method_names_those_the_files_declare() -> None:
    with pytest.raises(LoadInputError, match=r"unknown method 'Putt' .*did you mean 'Put'"):
        await resolve_method(NOWHERE, "/kvexample.v1.KeyValue/Putt", protos=[KV_PROTO])


async def test_without_grpcio_tools_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As if it were not installed: both names, since find_spec answers from sys.modules when
    # an earlier test in this worker imported grpc_tools.protoc.
    monkeypatch.setitem(sys.modules, "grpc_tools", None)
    monkeypatch.setitem(sys.modules, "grpc_tools.protoc", None)
    with pytest.raises(LoadInputError) as error:
        await resolve_method(NOWHERE, "/kvexample.v1.KeyValue/Put", protos=[KV_PROTO])
    assert "pip install grpcio-tools" in str(error.value)
    assert "descriptor_set" in str(error.value)


async def test_protos_and_a_descriptor_set_at_once_are_refused() -> None:
    with pytest.raises(LoadInputError, match="not both"):
        await resolve_method(
            NOWHERE,
            "/kvexample.v1.KeyValue/Put",
            protos=[KV_PROTO],
            descriptor_set=KV_PROTO.with_suffix(".binpb"),
        )
