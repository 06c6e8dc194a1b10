"""`mesh jobs list|show|retry|mailbox`: the receipts queue and the local mailbox."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console, RenderableType

from grpc_resilience_mesh.chaos.report.table_fit import Column, FitTable
from grpc_resilience_mesh.cli.json_out import JsonOpt, to_stdout, write_json
from grpc_resilience_mesh.client.mail.mailbox import Mailbox
from grpc_resilience_mesh.client.queue_admin import STATES, JobView, QueueAdmin, dumps, redis_addr
from grpc_resilience_mesh.client.state import STATE_DIR

app = typer.Typer(
    help="Receipts: the background-job queue and the local mailbox.", no_args_is_help=True
)
console = Console()
T = TypeVar("T")

StateDir = Annotated[
    Path,
    typer.Option(envvar=STATE_DIR.name, help="The running mesh's state directory."),
]
RedisOpt = Annotated[str | None, typer.Option("--redis", help="HOST:PORT (default: the mesh's).")]


def _with_admin(state_dir: Path, redis: str | None, fn: Callable[[QueueAdmin], Awaitable[T]]) -> T:
    try:
        addr = redis_addr(state_dir, redis)
    except LookupError as err:
        console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(2) from None

    async def run() -> T:
        admin = QueueAdmin(addr)
        try:
            return await fn(admin)
        finally:
            await admin.close()

    return asyncio.run(run())


def _when(ms: int | None) -> str:
    if not ms:
        return "-"
    return dt.datetime.fromtimestamp(int(ms) / 1000).strftime("%H:%M:%S.%f")[:-3]


def jobs_table(views: list[JobView], width: int) -> RenderableType:
    """Job ids whole (a receipt's id carries its charge id), the failure reason wrapped."""
    table = FitTable(
        [
            Column("job", justify="left", keep=True),
            Column("state", justify="left", keep=True),
            Column("attempts"),
            Column("processed", justify="left"),
            Column("finished", justify="left"),
            Column("failed reason", justify="left", wraps=True),
        ],
        priority=[0, 1, 2, 5, 4, 3],
    )
    for v in views:
        table.add_row(
            v.id,
            v.state,
            f"{v.attempts_made}/{v.attempts}",
            _when(v.processed_on),
            _when(v.finished_on),
            v.failed_reason or "-",
        )
    return table.render(width)


@app.command("list")
def list_(
    state: Annotated[str | None, typer.Option(help=f"One of {', '.join(STATES)}.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many per state.")] = 50,
    state_dir: StateDir = Path("var"),
    redis: RedisOpt = None,
    json_path: JsonOpt = None,
) -> None:
    """Jobs by state, with attempts and the reason of the last failure."""
    if state is not None and state not in STATES:
        console.print(f"[red]error:[/red] --state must be one of {', '.join(STATES)}")
        raise typer.Exit(2)
    states = (state,) if state else STATES
    views = _with_admin(state_dir, redis, lambda a: a.list(states, limit))
    if json_path is not None:
        write_json(json_path, [v.as_dict() for v in views])
        if to_stdout(json_path):
            return
    console.print(jobs_table(views, console.width))


@app.command()
def show(job_id: str, state_dir: StateDir = Path("var"), redis: RedisOpt = None) -> None:
    """One job in full (data, attempts, failure reason) as JSON."""
    view = _with_admin(state_dir, redis, lambda a: a.show(job_id))
    if view is None:
        console.print(f"[red]no job {job_id!r}[/red]")
        raise typer.Exit(1)
    print(dumps(view))


@app.command()
def retry(job_id: str, state_dir: StateDir = Path("var"), redis: RedisOpt = None) -> None:
    """Send a failed job back to the queue with its attempts reset."""
    try:
        new_state = _with_admin(state_dir, redis, lambda a: a.retry(job_id))
    except (LookupError, ValueError) as err:
        console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(1) from None
    console.print(f"{job_id}: {new_state}")


@app.command()
def mailbox(
    state_dir: StateDir = Path("var"),
    limit: Annotated[int, typer.Option(help="The last N messages.")] = 20,
    json_path: JsonOpt = None,
) -> None:
    """Receipts the local SMTP sink accepted (<state_dir>/mailbox), newest last."""
    box = Mailbox(state_dir / "mailbox")
    mails = box.messages()
    if json_path is not None:
        write_json(json_path, [{**vars(m), "path": str(m.path)} for m in mails[-limit:]])
        if to_stdout(json_path):
            return
    table = FitTable(
        [
            Column("received", justify="left"),
            Column("to", justify="left"),
            Column("subject", justify="left", wraps=True),
            Column("charge", justify="left", keep=True),
            Column("message-id", justify="left"),
        ],
        priority=[3, 0, 2, 1, 4],
        title=f"{len(mails)} message(s) in {box.root}",
    )
    for m in mails[-limit:]:
        table.add_row(
            dt.datetime.fromtimestamp(m.received_at).strftime("%H:%M:%S.%f")[:-3],
            m.to,
            m.subject,
            m.charge_id,
            m.message_id,
        )
    console.print(table.render(console.width))
