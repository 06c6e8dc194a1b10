"""What a load needs to know of one method (`MethodInfo`), found by name in a descriptor pool,
and the one error of bad load input (`LoadInputError`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.message import Message


class LoadInputError(Exception):
    """The load cannot start as asked, and nothing was sent: an unknown service or method (the
    message names what exists), a request that does not fit its message (names the field), a
    client-streaming method, a target without reflection and no descriptor set given."""


@dataclass(frozen=True)
class MethodInfo:
    """One method, with the message classes that encode its requests and decode its answers."""

    full_name: str
    """"/pkg.Service/Method": the path gRPC sends."""
    request_type: type[Message]
    response_type: type[Message]
    server_streaming: bool
    client_streaming: bool


def split_method_name(method: str) -> tuple[str, str]:
    """ "/pkg.Service/Method" or "pkg.Service/Method" as (service, method)."""
    service, _, name = method.lstrip("/").rpartition("/")
    if not service or not name or "/" in service:
        raise LoadInputError(f"method {method!r}: expected /package.Service/Method")
    return service, name


def method_in_pool(
    pool: descriptor_pool.DescriptorPool, services: Iterable[str], method: str, where: str
) -> MethodInfo:
    """The method named `method` among `services` (those `where` offers, all in `pool`).

    Client streaming is refused here rather than at call time: a load sends one request per
    call, so such a method would fail every call the same way after faults were injected."""
    service_name, method_name = split_method_name(method)
    known = sorted(services)
    if service_name not in known:
        raise LoadInputError(
            f"unknown service {service_name!r} at {where}{_did_you_mean(service_name, known)}"
            f" (known: {', '.join(known) or 'none'})"
        )
    service = pool.FindServiceByName(service_name)
    methods = sorted(m.name for m in service.methods)
    if method_name not in methods:
        raise LoadInputError(
            f"unknown method {method_name!r} of {service_name}"
            f"{_did_you_mean(method_name, methods)} (known: {', '.join(methods)})"
        )
    found = service.methods_by_name[method_name]
    full_name = f"/{service_name}/{method_name}"
    if found.client_streaming:
        raise LoadInputError(
            f"{full_name} is client streaming: a load calls unary and server-streaming methods"
        )
    return MethodInfo(
        full_name=full_name,
        request_type=message_factory.GetMessageClass(found.input_type),
        response_type=message_factory.GetMessageClass(found.output_type),
        server_streaming=found.server_streaming,
        client_streaming=False,
    )


def _did_you_mean(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""
