"""`mesh call`: a human's way to poke the gateway."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import grpc
import typer
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grpc_aio_resilience import PUSHBACK_KEY, seen_by_caller
from grpc_resilience_mesh.cli.json_out import JsonOpt, to_stdout, write_json
from grpc_resilience_mesh.cli.suggest import mesh_program
from grpc_resilience_mesh.client.state import STATE_DIR, STATE_FILE, MeshState
from grpc_resilience_mesh.client.stream_client import StreamRead, read_stream
from grpc_resilience_mesh.client.trace_source import TraceSource
from grpc_resilience_mesh.loadgen.in_process import metadata_for, traced
from grpc_resilience_mesh.services import settings, topology
from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc, payment_pb2

app = typer.Typer(help="Call the gateway's RPCs and print the answer.", no_args_is_help=True)
DEFAULT_GATEWAY = f"127.0.0.1:{topology.embedded_port(topology.GATEWAY.port)}"
"""Where `mesh up` puts the gateway without --auto-ports or --gateway-port."""
console = Console()
notes = Console(stderr=True)
"""Timing notes go to stderr, so `--json` output on stdout stays machine-readable."""
M = TypeVar("M", bound=Message)

AddrOpt = Annotated[
    str | None,
    typer.Option(
        "--addr",
        help="Gateway HOST:PORT (default: from var/mesh.json, else "
        f"$MESH_GATEWAY, else {DEFAULT_GATEWAY}).",
    ),
]
TimeoutOpt = Annotated[float, typer.Option(help="Deadline of the call, seconds.")]
UserOpt = Annotated[str, typer.Option(help="A user id such as u-0001 (u-0001..u-0200 exist).")]
LimitOpt = Annotated[int, typer.Option(help="How many recommendations (1..50).")]


@dataclass(frozen=True)
class Found:
    """Where the gateway and the API key came from, to say so when a call goes wrong."""

    gateway: str
    api_key: str | None
    state_file: Path
    state_found: bool
    key_from: str
    traces: TraceSource | None = None
    """Where the running mesh sends its spans (None: no mesh.json found)."""

    def trace_hint(self, trace_id: str) -> str:
        """How to draw `trace_id` from where its spans went (local files, this state dir's,
        when no mesh.json says otherwise)."""
        source = self.traces or TraceSource("files", str(self.state_file.parent / "traces"))
        return source.hint(trace_id, mesh_program())

    def where(self) -> str:
        state = (
            "found"
            if self.state_found
            else "not found: run from the folder of `mesh up`, or set MESH_STATE_DIR"
        )
        return f"mesh state: {self.state_file.resolve()} ({state}); API key: {self.key_from}"


API_KEY = settings.Var("MESH_API_KEY", settings.text, "", "the API key `mesh call` sends")
GATEWAY = settings.Var("MESH_GATEWAY", settings.address, "", "the gateway `mesh call` calls")


def _target(addr: str | None) -> Found:
    state_file = Path(STATE_DIR.read()) / STATE_FILE
    state = MeshState.load(state_file.parent)
    if API_KEY.read():
        api_key, key_from = API_KEY.read(), "from MESH_API_KEY"
    elif state is not None and state.api_key:
        api_key, key_from = state.api_key, f"from {state_file}"
    else:
        api_key, key_from = None, "none (MESH_API_KEY is unset and no mesh.json holds one)"
    gateway = addr or GATEWAY.read() or (state.gateway if state else DEFAULT_GATEWAY)
    traces = TraceSource.of(state) if state is not None else None
    return Found(gateway, api_key, state_file, state is not None, key_from, traces)


def _invoke(
    ctx: typer.Context,
    addr: str | None,
    timeout: float,
    fn: Callable[[gateway_pb2_grpc.GatewayStub, Any], Awaitable[M]],
) -> tuple[M, str]:
    """The reply and the trace id the call was sent with (a fresh W3C traceparent)."""
    found = _target(addr)
    trace_id, md = traced(metadata_for(found.api_key))

    async def go() -> M:
        async with grpc.aio.insecure_channel(found.gateway) as channel:
            started = time.perf_counter()
            call = fn(gateway_pb2_grpc.GatewayStub(channel), md)
            reply = await call
            elapsed_ms[0] = (time.perf_counter() - started) * 1000
            trailers = await cast(grpc.aio.Call, call).trailing_metadata()
            fate[0] = seen_by_caller("OK", trailers, "")  # a plain `ok` is no trailer
            return reply

    elapsed_ms, fate = [0.0], [""]
    try:
        reply = asyncio.run(asyncio.wait_for(go(), timeout + 1))
        _note_after_the_answer(
            ctx,
            f"[dim]answered in {elapsed_ms[0]:.0f} ms by {found.gateway}; fate {fate[0] or '?'}; "
            f"trace {trace_id} ({escape(found.trace_hint(trace_id))})[/dim]",
        )
        return reply, trace_id
    except grpc.aio.AioRpcError as err:
        console.print(f"[red]{err.code().name}[/red]: {escape(err.details() or '')}")
        fate_seen = seen_by_caller(err.code().name, err.trailing_metadata(), "")
        console.print(f"fate: {escape(fate_seen)}", highlight=False)
        for key, value in err.trailing_metadata() or ():
            if key == PUSHBACK_KEY:
                console.print(f"retry after: {value} ms")
        console.print(f"trace: {trace_id}", soft_wrap=True)
        if err.code() == grpc.StatusCode.UNAVAILABLE and "connect" in (err.details() or ""):
            console.print(f"is the mesh up? (`mesh up`; gateway expected at {found.gateway})")
        if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAUTHENTICATED):
            console.print(escape(found.where()), soft_wrap=True)
        raise typer.Exit(1) from None
    except TimeoutError:
        console.print(f"[red]no answer[/red] from {found.gateway} within {timeout + 1:g} s")
        console.print(f"trace: {trace_id}", soft_wrap=True)
        raise typer.Exit(1) from None


def _note_after_the_answer(ctx: typer.Context, text: str) -> None:
    """Print `text` on stderr once the command has printed its answer on stdout, stdout flushed
    first: under `2>&1 | cat` stdout is block-buffered and stderr is not, so the note came out
    first or in the middle of the answer's last line ("degraded: noneanswered in 16 ms")."""

    def show() -> None:
        console.file.flush()
        notes.print(text, highlight=False, soft_wrap=True)

    ctx.call_on_close(show)


def _print_json(message: Message, trace_id: str, json_path: Path) -> None:
    doc = MessageToDict(message, preserving_proto_field_name=True)
    write_json(json_path, {**doc, "trace_id": trace_id})


def _status_name(status: int) -> str:
    name: str = payment_pb2.ChargeStatus.Name(status)
    return name.removeprefix("CHARGE_STATUS_")


@app.command()
def home(
    ctx: typer.Context,
    user: UserOpt,
    limit: LimitOpt = 5,
    addr: AddrOpt = None,
    json_path: JsonOpt = None,
    timeout: TimeoutOpt = 2.0,
) -> None:
    """GetHome: the user's profile and recommendations, and what was degraded."""
    reply, trace_id = _invoke(
        ctx,
        addr,
        timeout,
        lambda stub, md: stub.GetHome(
            gateway_pb2.GetHomeRequest(user_id=user, limit=limit), timeout=timeout, metadata=md
        ),
    )
    if json_path is not None:
        _print_json(reply, trace_id, json_path)
        if to_stdout(json_path):
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


INT64_MAX = 2**63 - 1
"""amount_cents is an int64: anything larger cannot be sent (the gateway checks the rest)."""


def parse_amount(text: str) -> int:
    """'12.50' -> 1250 cents; ValueError for a non-number, a non-finite one (inf, nan, sNaN),
    more than two decimals, or more than int64 cents hold."""
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a number like 12.50") from None
    if not value.is_finite():
        raise ValueError(f"{text!r} is not a finite number; give one like 12.50")
    cents = value * 100
    if abs(cents) > INT64_MAX:
        raise ValueError(f"{text!r} is too large to send")
    if cents != cents.to_integral_value():
        raise ValueError(f"{text!r} has more than two decimals")
    return int(cents)


@app.command()
def checkout(
    ctx: typer.Context,
    user: Annotated[str, typer.Option(help="A user id such as u-0001.")],
    amount: Annotated[str, typer.Option(help="Amount in major units, e.g. 12.50.")],
    currency: Annotated[str, typer.Option(help="USD, EUR, GBP or UZS.")] = "USD",
    key: Annotated[
        str | None,
        typer.Option(help="Idempotency key; reuse it to retry safely (default: a new random key)."),
    ] = None,
    addr: AddrOpt = None,
    json_path: JsonOpt = None,
    timeout: TimeoutOpt = 5.0,
) -> None:
    """Checkout: charge the user once per idempotency key."""
    try:
        cents = parse_amount(amount)
    except ValueError as err:
        notes.print(f"error: --amount: {escape(str(err))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    idem = key or f"cli-{uuid.uuid4().hex}"
    reply, trace_id = _invoke(
        ctx,
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
    if json_path is not None:
        _print_json(reply, trace_id, json_path)
        if to_stdout(json_path):
            return
    console.print(
        f"charge {reply.charge_id}: [bold]{_status_name(reply.status)}[/bold]"
        + (f" ({reply.decline_reason})" if reply.decline_reason else "")
        + (" (replayed: this key was already charged)" if reply.replayed else "")
    )
    console.print(f"idempotency key: {idem}")


@app.command()
def charge(
    ctx: typer.Context,
    charge_id: Annotated[str | None, typer.Option("--id", help="Charge id (ch_...).")] = None,
    key: Annotated[str | None, typer.Option(help="The idempotency key of the checkout.")] = None,
    addr: AddrOpt = None,
    json_path: JsonOpt = None,
    timeout: TimeoutOpt = 2.0,
) -> None:
    """GetCharge: resolve a PENDING checkout by charge id or idempotency key."""
    if not charge_id and not key:
        raise typer.BadParameter("give --id or --key")
    reply, trace_id = _invoke(
        ctx,
        addr,
        timeout,
        lambda stub, md: stub.GetCharge(
            payment_pb2.GetChargeRequest(charge_id=charge_id or "", idempotency_key=key or ""),
            timeout=timeout,
            metadata=md,
        ),
    )
    if json_path is not None:
        _print_json(reply, trace_id, json_path)
        if to_stdout(json_path):
            return
    console.print(
        f"charge {reply.charge_id}: [bold]{_status_name(reply.status)}[/bold]"
        + (f" ({reply.decline_reason})" if reply.decline_reason else "")
    )


@app.command()
def stream(
    user: UserOpt,
    limit: LimitOpt = 5,
    timeout: Annotated[float, typer.Option(help="Deadline of the whole stream, seconds.")] = 5.0,
    addr: AddrOpt = None,
    json_path: JsonOpt = None,
) -> None:
    """StreamRecommendations: the user's recommendations, printed as each is ranked. A stream
    cut after some items prints those and the error, flagged partial (exit 1)."""
    found = _target(addr)
    trace_id, md = traced(metadata_for(found.api_key))
    quiet = to_stdout(json_path)

    def show(read: StreamRead, item: Any) -> None:
        if not quiet:
            p = item.product
            console.print(
                f"{item.rank:>3}  {p.product_id}  {escape(p.title)}  {p.category}  "
                f"{p.price_cents / 100:.2f}  [dim]+{read.arrived_ms[-1]:.0f} ms[/dim]",
                highlight=False,
            )

    async def go() -> StreamRead:
        async with grpc.aio.insecure_channel(found.gateway) as channel:
            stub = gateway_pb2_grpc.GatewayStub(channel)
            return await read_stream(stub, user, limit, timeout, md, on_item=show)

    read = asyncio.run(go())
    if json_path is not None:
        write_json(json_path, {**read.as_json(), "trace_id": trace_id})
    if read.code == "OK":
        notes.print(f"[dim]{len(read.items)} items; trace {trace_id}[/dim]", highlight=False)
        return
    out = notes if quiet else console  # with --json -, stdout holds the JSON alone
    out.print(f"[red]{read.code}[/red]: {escape(read.details)}")
    if read.partial:
        out.print(
            f"[yellow]partial[/yellow]: the stream failed after {read.flagged_messages} "
            "items; those above stand, the rest never came"
        )
    out.print(f"trace: {trace_id}", soft_wrap=True)
    if read.code in ("UNAVAILABLE", "UNAUTHENTICATED") and not read.items:
        out.print(escape(found.where()), soft_wrap=True)
    raise typer.Exit(1)
