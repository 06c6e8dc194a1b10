"""A method by name, before any load: resolved by server reflection (v1, else v1alpha) or a
descriptor set, and every request rendered and checked; bad input is an error naming what is
wrong and what exists."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from examples.kv import kv_pb2
from grpc_resilience_mesh.launch.ports import free_port
from grpc_resilience_mesh.loadgen.any_method import (
    LoadInputError,
    render_requests,
    resolve_method,
)
from tests.integration.loadgen.any_method_servers import (
    Counter,
    counter_file,
    counter_serving,
    kv_with_reflection,
)

KV_GET = "/kvexample.v1.KeyValue/Get"


async def test_reflection_resolves_a_unary_method_of_the_kv_example() -> None:
    async with kv_with_reflection() as target:
        info = await resolve_method(target, "kvexample.v1.KeyValue/Get")
    assert info.full_name == KV_GET
    assert (info.server_streaming, info.client_streaming) == (False, False)
    assert info.request_type.DESCRIPTOR.full_name == "kvexample.v1.GetRequest"
    assert info.response_type.DESCRIPTOR.full_name == "kvexample.v1.GetResponse"
    [(request, _)] = render_requests(info, {"key": "k"}, {}, 1)
    assert kv_pb2.GetRequest.FromString(request.SerializeToString()).key == "k"


async def test_reflection_served_as_v1_only_resolves_too() -> None:
    async with counter_serving(Counter(), v1_only=True) as target:
        info = await resolve_method(target, "/loadtest.v1.Counter/Count")
    assert info.server_streaming


async def test_reflection_fetches_the_files_a_service_s_file_imports() -> None:
    async with counter_serving(Counter(), v1_only=True) as target:
        info = await resolve_method(target, "/loadtest.v1.Wallet/Pay")
    assert info.request_type.DESCRIPTOR.full_name == "loadtest.v1.Money"
    assert info.request_type.DESCRIPTOR.file.name == "loadtest/money.proto"
    [(request, _)] = render_requests(info, {"units": "4{n}"}, {}, 1)
    assert request.units == 40


async def test_unknown_service_names_those_that_exist() -> None:
    async with kv_with_reflection() as target:
        with pytest.raises(LoadInputError) as error:
            await resolve_method(target, "/kvexample.v1.KeyValues/Get")
    message = str(error.value)
    assert "unknown service 'kvexample.v1.KeyValues'" in message
    assert "did you mean 'kvexample.v1.KeyValue'" in message


async def test_unknown_method_names_the_methods_of_its_service() -> None:
    async with kv_with_reflection() as target:
        with pytest.raises(LoadInputError) as error:
            await resolve_method(target, "/kvexample.v1.KeyValue/Gte")
    message = str(error.value)
    assert "unknown method 'Gte'" in message and "did you mean 'Get'" in message
    assert "known: Add, Delete, Get, Put" in message


async def test_a_malformed_method_name_is_refused() -> None:
    with pytest.raises(LoadInputError, match=r"expected /package\.Service/Method"):
        await resolve_method("127.0.0.1:1", "Get")


async def test_client_streaming_is_refused() -> None:
    async with counter_serving(Counter()) as target:
        with pytest.raises(LoadInputError, match="Sum is client streaming"):
            await resolve_method(target, "/loadtest.v1.Counter/Sum")


async def test_a_server_without_reflection_is_named_with_the_way_out() -> None:
    async with kv_with_reflection(reflect=False) as target:
        with pytest.raises(LoadInputError, match="does not serve gRPC reflection: give a"):
            await resolve_method(target, KV_GET)


async def test_a_target_nobody_serves_is_an_input_error() -> None:
    target = f"127.0.0.1:{free_port()}"
    with pytest.raises(LoadInputError, match=f"reflection at {target} failed: UNAVAILABLE"):
        await resolve_method(target, KV_GET, timeout_s=2.0)


async def test_a_descriptor_set_resolves_without_asking_the_target(tmp_path: Path) -> None:
    path = tmp_path / "counter.pb"
    path.write_bytes(descriptor_pb2.FileDescriptorSet(file=[counter_file()]).SerializeToString())
    info = await resolve_method(
        f"127.0.0.1:{free_port()}", "/loadtest.v1.Counter/Count", descriptor_set=path
    )
    assert info.server_streaming and not info.client_streaming
    assert info.request_type.DESCRIPTOR.full_name == "loadtest.v1.CountRequest"
    with pytest.raises(LoadInputError, match="known: Count, Echo, Sum"):
        await resolve_method("127.0.0.1:1", "/loadtest.v1.Counter/Nope", descriptor_set=path)


async def test_a_descriptor_set_lacking_an_import_names_it(tmp_path: Path) -> None:
    file = counter_file()
    file.dependency.append("vendor/money.proto")
    path = tmp_path / "partial.pb"
    path.write_bytes(descriptor_pb2.FileDescriptorSet(file=[file]).SerializeToString())
    with pytest.raises(LoadInputError, match=r"lacks 'vendor/money\.proto'.*--include_imports"):
        await resolve_method("127.0.0.1:1", "/loadtest.v1.Counter/Echo", descriptor_set=path)
    with pytest.raises(LoadInputError, match=r"descriptor_set .*missing\.pb"):
        await resolve_method("127.0.0.1:1", KV_GET, descriptor_set=tmp_path / "missing.pb")


async def test_every_request_and_header_is_rendered_with_its_index() -> None:
    async with counter_serving(Counter()) as target:
        info = await resolve_method(target, "/loadtest.v1.Counter/Echo")
    calls = render_requests(info, {"n": "{n}", "tag": "r-{n}"}, {"x-tenant": "t{n}"}, 3)
    assert [(request.n, request.tag) for request, _ in calls] == [
        (0, "r-0"),
        (1, "r-1"),
        (2, "r-2"),
    ]
    assert [headers for _, headers in calls] == [(("x-tenant", f"t{i}"),) for i in range(3)]
    fixed = render_requests(info, {"n": 7}, {}, 2)
    assert [request.n for request, _ in fixed] == [7, 7]


async def test_a_request_that_does_not_fit_its_message_names_the_field() -> None:
    async with kv_with_reflection() as target:
        info = await resolve_method(target, KV_GET)
    with pytest.raises(LoadInputError, match='no field named "kee"') as error:
        render_requests(info, {"kee": "k-{n}"}, {}, 5)
    assert "request 0 for /kvexample.v1.KeyValue/Get" in str(error.value)
    with pytest.raises(LoadInputError, match="key"):
        render_requests(info, {"key": 5}, {}, 1)


async def test_a_templated_number_that_does_not_parse_names_the_field() -> None:
    async with counter_serving(Counter()) as target:
        info = await resolve_method(target, "/loadtest.v1.Counter/Echo")
    with pytest.raises(LoadInputError, match=r"request 0 .*Failed to parse n field"):
        render_requests(info, {"n": "x{n}"}, {}, 3)


async def test_metadata_gRPC_cannot_send_is_refused_before_any_load() -> None:
    async with counter_serving(Counter()) as target:
        info = await resolve_method(target, "/loadtest.v1.Counter/Echo")
    for key in ("X-Tenant", "grpc-timeout", "blob-bin"):
        with pytest.raises(LoadInputError, match=f"metadata key '{key}'"):
            render_requests(info, {}, {key: "v"}, 1)
