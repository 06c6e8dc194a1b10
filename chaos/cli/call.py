"""`mesh call`: a human's way to poke the gateway."""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, TypeVar

import grpc
import typer
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from rich.console import Console
from rich.table import Table

from chaos.launcher import MeshState
from chaos.load import metadata_for
from mesh.resilience.errors import PUSHBACK_KEY
from mesh.v1 import gateway_pb2, gateway_pb2_grpc, payment_pb2

app = typer.Typer(help="Call the gateway's RPCs and print the answer.", no_args_is_help=True)
console = Console()
notes = Console(stderr=True)
"""Timing notes go to stderr, so `--json` output on stdout stays machine-readable."""
M = TypeVar("M", bound=Message)

AddrOpt = Annotated[
    str | None,
    typer.Option(
        "--addr",
        help="Gateway HOST:PORT (default: from var/mesh.json, else "
        "$MESH_GATEWAY, else 127.0.0.1:50051).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the response as JSON.")]
TimeoutOpt = Annotated[float, typer.Option(help="Deadline of the call, seconds.")]


def _target(addr: str | None) -> tuple[str, str | None]:
    state = MeshState.load(Path(os.environ.get("MESH_STATE_DIR", "var")))
    api_key = os.environ.get("MESH_API_KEY") or (state.api_key if state else None)
    if addr:
        return addr, api_key
    if os.environ.get("MESH_GATEWAY"):
        return os.environ["MESH_GATEWAY"], api_key
    return (state.gateway if state else "127.0.0.1:50051"), api_key


def _invoke(
    addr: str | None,
    timeout: float,
    fn: Callable[[gateway_pb2_grpc.GatewayStub, Any], Awaitable[M]],
) -> M:
    target, api_key = _target(addr)

    async def go() -> M:
        async with grpc.aio.insecure_channel(target) as channel:
            started = time.perf_counter()
            reply = await fn(gateway_pb2_grpc.GatewayStub(channel), metadata_for(api_key))
            elapsed_ms[0] = (time.perf_counter() - started) * 1000
            return reply

    elapsed_ms = [0.0]
    try:
        reply = asyncio.run(asyncio.wait_for(go(), timeout + 1))
        notes.print(f"[dim]answered in {elapsed_ms[0]:.0f} ms by {target}[/dim]", highlight=False)
        return reply
    except grpc.aio.AioRpcError as err:
        console.print(f"[red]{err.code().name}[/red]: {err.details()}")
        for key, value in err.trailing_metadata() or ():
            if key == PUSHBACK_KEY:
                console.print(f"retry after: {value} ms")
        if err.code() == grpc.StatusCode.UNAVAILABLE and "connect" in (err.details() or ""):
            console.print(f"is the mesh up? (`mesh up`; gateway expected at {target})")
        raise typer.Exit(1) from None


def _print_json(message: Message) -> None:
    typer.echo(json.dumps(MessageToDict(message, preserving_proto_field_name=True), indent=2))


def _status_name(status: int) -> str:
    name: str = payment_pb2.ChargeStatus.Name(status)
    return name.removeprefix("CHARGE_STATUS_")


@app.command()
def home(
    user: Annotated[str, typer.Option(help="A user id such as u-0001 (u-0001..u-0200 exist).")],
    limit: Annotated[int, typer.Option(help="How many recommendations (1..50).")] = 5,
    addr: AddrOpt = None,
    json_out: JsonOpt = False,
    timeout: TimeoutOpt = 2.0,
) -> None:
    """GetHome: the user's profile and recommendations, and what was degraded."""
    reply = _invoke(
        addr,
        timeout,
        lambda stub, md: stub.GetHome(
            gateway_pb2.GetHomeRequest(user_id=user, limit=limit), timeout=timeout, metadata=md
        ),
    )
    if json_out:
        _print_json(reply)
        return
    p = reply.profile
    console.print(
        f"[bold]{p.display_name}[/bold] ({p.user_id}, {p.tier}) interests: {', '.join(p.interests)}"
    )
    table = Table("product", "title", "category", "price", "score")
    for r in reply.recommendations:
        table.add_row(
            r.product_id, r.title, r.category, f"{r.price_cents / 100:.2f}", f"{r.score:.3f}"
        )
    console.print(table)
    if not reply.degraded:
        console.print("degraded: none")
    for d in reply.degraded:
        console.print(
            f"[yellow]degraded[/yellow] {d.part}: served by {d.served_by} ({d.code}: {d.reason})"
        )


def parse_amount(text: str) -> int:
    """'12.50' -> 1250 cents; more than two decimals or a non-number is an error."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise typer.BadParameter(f"{text!r} is not a number like 12.50") from None
    cents = value * 100
    if cents != cents.to_integral_value():
        raise typer.BadParameter(f"{text!r} has more than two decimals")
    return int(cents)


@app.command()
def checkout(
    user: Annotated[str, typer.Option(help="A user id such as u-0001.")],
    amount: Annotated[str, typer.Option(help="Amount in major units, e.g. 12.50.")],
    currency: Annotated[str, typer.Option(help="USD, EUR, GBP or UZS.")] = "USD",
    key: Annotated[
        str | None,
        typer.Option(help="Idempotency key; reuse it to retry safely (default: a new random key)."),
    ] = None,
    addr: AddrOpt = None,
    json_out: JsonOpt = False,
    timeout: TimeoutOpt = 5.0,
) -> None:
    """Checkout: charge the user once per idempotency key."""
    cents = parse_amount(amount)
    idem = key or f"cli-{uuid.uuid4().hex}"
    reply = _invoke(
        addr,
        timeout,
        lambda stub, md: stub.Checkout(
            gateway_pb2.CheckoutRequest(
                user_id=user, amount_cents=cents, currency=currency, idempotency_key=idem
            ),
            timeout=timeout,
            metadata=md,
        ),
    )
    if json_out:
        _print_json(reply)
        return
    console.print(
        f"charge {reply.charge_id}: [bold]{_status_name(reply.status)}[/bold]"
        + (f" ({reply.decline_reason})" if reply.decline_reason else "")
        + (" (replayed: this key was already charged)" if reply.replayed else "")
    )
    console.print(f"idempotency key: {idem}")


@app.command()
def charge(
    charge_id: Annotated[str | None, typer.Option("--id", help="Charge id (ch_...).")] = None,
    key: Annotated[str | None, typer.Option(help="The idempotency key of the checkout.")] = None,
    addr: AddrOpt = None,
    json_out: JsonOpt = False,
    timeout: TimeoutOpt = 2.0,
) -> None:
    """GetCharge: resolve a PENDING checkout by charge id or idempotency key."""
    if not charge_id and not key:
        raise typer.BadParameter("give --id or --key")
    reply = _invoke(
        addr,
        timeout,
        lambda stub, md: stub.GetCharge(
            payment_pb2.GetChargeRequest(charge_id=charge_id or "", idempotency_key=key or ""),
            timeout=timeout,
            metadata=md,
        ),
    )
    if json_out:
        _print_json(reply)
        return
    console.print(
        f"charge {reply.charge_id}: [bold]{_status_name(reply.status)}[/bold]"
        + (f" ({reply.decline_reason})" if reply.decline_reason else "")
    )
