"""Criticality: parsing from metadata, ordering, and the per-context current value."""

from __future__ import annotations

import asyncio

from grpc_aio_resilience import criticality
from grpc_aio_resilience.criticality import Criticality


def test_sheddable_ranks_below_critical() -> None:
    ranked = sorted(Criticality)
    assert ranked == [
        Criticality.SHEDDABLE,
        Criticality.SHEDDABLE_PLUS,
        Criticality.CRITICAL,
        Criticality.CRITICAL_PLUS,
    ]


def test_metadata_names_a_criticality_or_nothing() -> None:
    sheddable = [("resilience-criticality", "sheddable")]
    assert criticality.from_metadata(sheddable) is Criticality.SHEDDABLE
    assert criticality.from_metadata([("resilience-criticality", b"CRITICAL_PLUS")]) is (
        Criticality.CRITICAL_PLUS
    )
    assert criticality.from_metadata([("resilience-criticality", "urgent")]) is None
    assert criticality.from_metadata([("resilience-criticality", b"\xff")]) is None
    assert criticality.from_metadata([("other", "SHEDDABLE")]) is None
    assert criticality.from_metadata(None) is None


async def test_the_current_value_belongs_to_its_context() -> None:
    async def serve(value: Criticality) -> Criticality | None:
        token = criticality.set_current(value)
        try:
            await asyncio.sleep(0)
            return criticality.current()
        finally:
            criticality.reset_current(token)

    got = await asyncio.gather(serve(Criticality.SHEDDABLE), serve(Criticality.CRITICAL_PLUS))
    assert list(got) == [Criticality.SHEDDABLE, Criticality.CRITICAL_PLUS]
    assert criticality.current() is None
