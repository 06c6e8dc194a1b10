"""Charge ids are derived from idempotency keys, so a caller knows the id of a charge whose
outcome it never heard (PENDING) and can resolve it later with GetCharge."""

from __future__ import annotations

import hashlib


def charge_id_for(idempotency_key: str) -> str:
    return "ch_" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:24]
