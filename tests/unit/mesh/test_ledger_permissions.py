"""The ledger (the database, its -wal and its -shm) is readable by its owner only, from birth."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from grpc_resilience_mesh.services.payment.ledger import Ledger


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def modes(path: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mode & 0o777 for p in sorted(path.parent.iterdir())}


async def test_a_new_ledger_and_its_wal_and_shm_are_created_0600(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask_022: None
) -> None:
    def no_chmod(*_: object, **__: object) -> None:
        raise AssertionError("created readable, then tightened: there was a window")

    monkeypatch.setattr(os, "chmod", no_chmod)
    monkeypatch.setattr(os, "fchmod", no_chmod)
    path = tmp_path / "payment" / "ledger.sqlite3"
    ledger = Ledger(path)
    await ledger.charge("key-00000001", "u-0001", 1250, "USD", "")
    assert modes(path) == {
        "ledger.sqlite3": 0o600,
        "ledger.sqlite3-shm": 0o600,
        "ledger.sqlite3-wal": 0o600,
    }
    await ledger.close()


async def test_a_readable_ledger_from_an_older_version_is_tightened_before_use(
    tmp_path: Path, umask_022: None
) -> None:
    path = tmp_path / "ledger.sqlite3"
    path.touch(mode=0o644)  # an empty file is an empty SQLite database
    ledger = Ledger(path)
    await ledger.charge("key-00000002", "u-0001", 1250, "USD", "")
    assert set(modes(path).values()) == {0o600}
    await ledger.close()
