"""A layer chain wraps once per method only what may be wrapped once: a layer that decides per
call still decides on every call, a refusal meets only the layers outside the one refusing,
and a new handler inside is wrapped anew. No network: the chain as `protect_server`'s generic
handler answers `service()` as grpc.aio asks it."""

from __future__ import annotations

from typing import Any, NamedTuple

import grpc

from grpc_aio_resilience import ServerLayer, ServerPolicy, SheddingInterceptor
from grpc_aio_resilience.server_mount import ChainedHandlers, LayerChain

GET = "/kv.Kv/Get"


class Details(NamedTuple):
    method: str
    invocation_metadata: tuple[tuple[str, str], ...] = ()


async def _answer(request: Any, context: Any) -> str:
    return "answer"


def _handler() -> grpc.RpcMethodHandler:
    return grpc.unary_unary_rpc_method_handler(_answer)


class Marking(ServerLayer):
    """Wraps the handler with its name on the way out; counts the handlers it made."""

    def __init__(self, name: str, per_method: bool, refuses_when: str = "") -> None:
        self.name = name
        self.made = 0
        self.asked = 0
        self.refuses_when = refuses_when
        self.wraps_per_method = per_method  # type: ignore[misc]

    def refuse(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        if self.refuses_when and (self.refuses_when, "1") in (
            handler_call_details.invocation_metadata or ()
        ):
            return grpc.unary_unary_rpc_method_handler(_refused_by(self.name))
        return None

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        self.asked += 1
        if handler is None:
            return None
        inner = handler.unary_unary
        self.made += 1

        async def marked(request: Any, context: Any) -> str:
            return f"{self.name}({await inner(request, context)})"

        return handler._replace(unary_unary=marked)


class Passing(Marking):
    """Decides per call, and lets every handler through as it is."""

    def wrap(
        self, handler: grpc.RpcMethodHandler | None, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        return handler


def _refused_by(name: str) -> Any:
    async def refused(request: Any, context: Any) -> str:
        return f"refused by {name}"

    return refused


async def _call(handler: grpc.RpcMethodHandler | None) -> str:
    assert handler is not None
    result: str = await handler.unary_unary(None, None)
    return result


async def test_per_method_layers_wrap_once_and_per_call_layers_on_every_call() -> None:
    outer, per_call, inner = Marking("a", True), Marking("b", False), Marking("c", True)
    chain, handler = LayerChain([outer, per_call, inner]), _handler()
    answers = [await _call(chain.wrap(handler, Details(GET))) for _ in range(3)]
    assert answers == ["a(b(c(answer)))"] * 3
    assert (outer.made, per_call.made, inner.made) == (3, 3, 1)  # b's new handler each call
    # A per-call layer that gives back the same handler keeps the outer layers' wrapping.
    same = Passing("same", False)
    chain = LayerChain([outer, same, inner])
    for _ in range(3):
        assert await _call(chain.wrap(handler, Details(GET))) == "a(c(answer))"
    assert (outer.made, inner.made) == (4, 2)


async def test_a_new_handler_inside_is_wrapped_anew_and_unknown_methods_pass() -> None:
    layer = Marking("a", True)
    chain = LayerChain([layer])
    first, second = _handler(), _handler()
    assert await _call(chain.wrap(first, Details(GET))) == "a(answer)"
    assert await _call(chain.wrap(second, Details(GET))) == "a(answer)"
    assert layer.made == 2
    assert chain.wrap(None, Details("/kv.Kv/Nope")) is None
    assert chain.wrap(None, Details("/kv.Kv/Nope")) is None
    assert layer.asked == 4  # unknown methods are asked every time, never remembered


async def test_a_refusal_is_wrapped_by_the_layers_outside_only_on_every_call() -> None:
    outer, gate, inner = Marking("a", True), Marking("gate", True, "deny"), Marking("c", True)
    handlers = ChainedHandlers([outer, gate, inner])
    handlers.add_methods({GET: _handler()})
    denied = Details(GET, (("deny", "1"),))
    assert await _call(handlers.service(Details(GET))) == "a(gate(c(answer)))"
    assert await _call(handlers.service(denied)) == "a(refused by gate)"
    assert await _call(handlers.service(Details(GET))) == "a(gate(c(answer)))"
    assert await _call(handlers.service(denied)) == "a(refused by gate)"
    assert inner.made == 1


async def test_registered_methods_come_before_the_generic_handlers() -> None:
    async def generic(request: Any, context: Any) -> str:
        return "generic"

    handlers = ChainedHandlers([Marking("a", True)])
    handlers.add_generic(
        [
            grpc.method_handlers_generic_handler(
                "kv.Kv",
                {
                    "Get": grpc.unary_unary_rpc_method_handler(generic),
                    "Put": grpc.unary_unary_rpc_method_handler(generic),
                },
            )
        ]
    )
    handlers.add_methods({GET: _handler()})
    assert await _call(handlers.service(Details(GET))) == "a(answer)"
    assert await _call(handlers.service(Details("/kv.Kv/Put"))) == "a(generic)"
    assert handlers.service(Details("/kv.Kv/Nope")) is None


class _Context:
    """What admission reads of a served call: no metadata, no deadline, no code set."""

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()

    def time_remaining(self) -> float | None:
        return None

    def code(self) -> None:
        return None


async def test_shedding_wraps_once_per_method_until_its_policy_changes() -> None:
    """Whether admission wraps a method follows the policy alone: the chain asks it once per
    method, and again after a swap, which takes effect on the next call."""
    shedding = SheddingInterceptor("kv", ServerPolicy(max_in_flight=0))
    asked = 0
    wrap = shedding.wrap

    def counting(handler: Any, details: Any) -> Any:
        nonlocal asked
        asked += 1
        return wrap(handler, details)

    shedding.wrap = counting  # type: ignore[method-assign, assignment]
    seen: list[int] = []

    async def serve(request: Any, context: Any) -> str:
        seen.append(shedding.admission.in_flight)
        return "answer"

    async def served() -> str:
        handler = handlers.service(Details(GET))
        assert handler is not None
        answer: str = await handler.unary_unary(None, _Context())
        return answer

    handlers = ChainedHandlers([Marking("a", True), shedding])
    handlers.add_methods({GET: grpc.unary_unary_rpc_method_handler(serve)})
    for _ in range(3):
        assert await served() == "a(answer)"
    assert asked == 1 and seen == [0, 0, 0]  # no limit: admission steps aside
    shedding.update(ServerPolicy(max_in_flight=4))
    for _ in range(3):
        assert await served() == "a(answer)"
    assert asked == 2 and seen[3:] == [1, 1, 1]  # each call held a place
    assert shedding.admission.in_flight == 0
