"""The payment ledger: SQLite in WAL mode, one charge per idempotency key, durable on commit.

Outbox: a SUCCEEDED charge and its receipt job commit in one transaction (table `outbox`); the relay
(grpc_resilience_mesh.services.payment.outbox) hands unsent rows to the queue later, so a charge
committed while Redis is down still gets its receipt, and a receipt never exists without its charge.

Durability: `journal_mode=WAL` with `synchronous=FULL` fsyncs the WAL on every commit, so a
charge acknowledged to a caller survives kill -9 and power loss (NORMAL would only survive a
process crash). Every write runs on one dedicated thread, so SQLite sees a single writer and
the event loop never blocks on disk.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from grpc_resilience_mesh.services.contracts.charge_ids import charge_id_for
from grpc_resilience_mesh.services.contracts.receipt_job import Receipt, job_id_for

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS charges (
    charge_id       TEXT PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    request_hash    TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    amount_cents    INTEGER NOT NULL CHECK (amount_cents > 0),
    currency        TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('SUCCEEDED', 'DECLINED')),
    decline_reason  TEXT NOT NULL DEFAULT '',
    created_at      REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox (
    job_id     TEXT PRIMARY KEY,
    charge_id  TEXT NOT NULL REFERENCES charges (charge_id),
    payload    TEXT NOT NULL,
    created_at REAL NOT NULL,
    sent_at    REAL
);
CREATE INDEX IF NOT EXISTS outbox_unsent ON outbox (created_at) WHERE sent_at IS NULL;
"""


@dataclass(frozen=True)
class ChargeRecord:
    """One committed row of the ledger."""

    charge_id: str
    idempotency_key: str
    user_id: str
    amount_cents: int
    currency: str
    status: str
    decline_reason: str
    created_at: float


@dataclass(frozen=True)
class OutboxRow:
    """A receipt job waiting for the relay."""

    job_id: str
    charge_id: str
    payload: str
    """The job's data as JSON."""
    created_at: float


class IdempotencyConflict(Exception):
    """The key was already used for a charge with a different payload."""


def _create_owner_only(path: Path) -> None:
    """Create the database file 0600 before SQLite opens it: SQLite gives -wal and -shm the
    mode of the database file, so the whole ledger is born readable by its owner only. A
    ledger an older version left group- or world-readable is tightened before it is opened."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            if file.stat().st_mode & 0o077:
                file.chmod(0o600)
        except FileNotFoundError:
            pass


OPEN_WAIT_S = 5.0
"""How long a ledger's first open waits for another process opening the same file."""


def _prepare(db: sqlite3.Connection) -> None:
    """WAL, full sync and the schema, retried while another process does the same.

    Two processes turning WAL on at once (two replicas starting on one file) deadlock on the
    file's lock, and SQLite answers one of them `database is locked` at once, without its busy
    timeout: the loser tries again once the winner is through."""
    deadline = time.monotonic() + OPEN_WAIT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(SCHEMA)
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


def request_hash(user_id: str, amount_cents: int, currency: str) -> str:
    return hashlib.sha256(f"{user_id}|{amount_cents}|{currency}".encode()).hexdigest()


class Ledger:
    """Async facade over one SQLite connection used from one worker thread."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        _create_owner_only(path)
        self.path = path
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ledger")
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA busy_timeout=5000")
        _prepare(self._db)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def charge(
        self,
        key: str,
        user_id: str,
        amount_cents: int,
        currency: str,
        decline_reason: str,
        trace: Mapping[str, str] | None = None,
    ) -> tuple[ChargeRecord, bool]:
        """Commit a charge for `key`, or return the one it already made (replayed=True).

        A new SUCCEEDED charge commits its receipt job (carrying `trace`) with it."""
        result: tuple[ChargeRecord, bool] = await self._run(
            self._charge_sync, key, user_id, amount_cents, currency, decline_reason, trace
        )
        return result

    async def unsent(self, limit: int = 100) -> list[OutboxRow]:
        """Receipt jobs not yet handed to the queue, oldest first."""
        rows: list[OutboxRow] = await self._run(self._unsent_sync, limit)
        return rows

    async def mark_sent(self, job_ids: list[str]) -> None:
        await self._run(self._mark_sent_sync, job_ids, time.time())

    async def outbox_pending(self) -> int:
        return await self._count("SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL")

    async def get(self, charge_id: str = "", key: str = "") -> ChargeRecord | None:
        record: ChargeRecord | None = await self._run(self._get_sync, charge_id, key)
        return record

    async def count(self) -> int:
        return await self._count("SELECT COUNT(*) FROM charges")

    async def _count(self, sql: str) -> int:
        n: int = await self._run(lambda: self._db.execute(sql).fetchone()[0])
        return n

    async def close(self) -> None:
        await self._run(self._db.close)
        self._pool.shutdown(wait=True)

    def _charge_sync(
        self,
        key: str,
        user_id: str,
        amount_cents: int,
        currency: str,
        decline_reason: str,
        trace: Mapping[str, str] | None = None,
    ) -> tuple[ChargeRecord, bool]:
        digest = request_hash(user_id, amount_cents, currency)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            row = self._db.execute(
                "SELECT request_hash FROM charges WHERE idempotency_key = ?", (key,)
            ).fetchone()
            if row is not None:
                self._db.execute("ROLLBACK")
                if row[0] != digest:
                    raise IdempotencyConflict(key)
                existing = self._get_sync("", key)
                assert existing is not None
                return existing, True
            record = ChargeRecord(
                charge_id=charge_id_for(key),
                idempotency_key=key,
                user_id=user_id,
                amount_cents=amount_cents,
                currency=currency,
                status="DECLINED" if decline_reason else "SUCCEEDED",
                decline_reason=decline_reason,
                created_at=time.time(),
            )
            self._db.execute(
                "INSERT INTO charges VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.charge_id,
                    key,
                    digest,
                    user_id,
                    amount_cents,
                    currency,
                    record.status,
                    decline_reason,
                    record.created_at,
                ),
            )
            if record.status == "SUCCEEDED":
                self._add_receipt_job(record, trace)
            self._db.execute("COMMIT")
            return record, False
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise

    def _add_receipt_job(self, record: ChargeRecord, trace: Mapping[str, str] | None) -> None:
        receipt = Receipt(
            record.charge_id,
            record.user_id,
            record.amount_cents,
            record.currency,
            record.created_at,
        )
        self._db.execute(
            "INSERT INTO outbox (job_id, charge_id, payload, created_at) VALUES (?, ?, ?, ?)",
            (
                job_id_for(record.charge_id),
                record.charge_id,
                json.dumps(receipt.to_data(trace)),
                record.created_at,
            ),
        )

    def _unsent_sync(self, limit: int) -> list[OutboxRow]:
        rows = self._db.execute(
            "SELECT job_id, charge_id, payload, created_at FROM outbox WHERE sent_at IS NULL "
            "ORDER BY created_at LIMIT ?",
            (limit,),
        ).fetchall()
        return [OutboxRow(*row) for row in rows]

    def _mark_sent_sync(self, job_ids: list[str], now: float) -> None:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany(
                "UPDATE outbox SET sent_at = ? WHERE job_id = ?", [(now, j) for j in job_ids]
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def _get_sync(self, charge_id: str, key: str) -> ChargeRecord | None:
        column, value = ("charge_id", charge_id) if charge_id else ("idempotency_key", key)
        row = self._db.execute(
            "SELECT charge_id, idempotency_key, user_id, amount_cents, currency, status, "
            f"decline_reason, created_at FROM charges WHERE {column} = ?",
            (value,),
        ).fetchone()
        return ChargeRecord(*row) if row else None
