"""Charge ids are derived from idempotency keys, so a caller knows the id of a charge whose
outcome it never heard (PENDING) and can resolve it later with GetCharge."""

from __future__ import annotations

import hashlib
import re

from grpc_resilience_mesh.services.contracts.fields import FieldError, check_idempotency_key

CHARGE_ID_RE = re.compile(r"ch_[0-9a-f]{24}", re.ASCII)
"""What `charge_id_for` makes: matched whole, so no trailing newline or other digits pass."""


def charge_id_for(idempotency_key: str) -> str:
    return "ch_" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:24]


def check_charge_lookup(charge_id: str, idempotency_key: str) -> tuple[str, str]:
    """A GetCharge request's (charge_id, idempotency_key): one or both, each well-formed, and
    naming the same charge when both are given."""
    if not charge_id and not idempotency_key:
        raise FieldError("charge_id", "give charge_id or idempotency_key")
    if charge_id and not CHARGE_ID_RE.fullmatch(charge_id):
        raise FieldError("charge_id", f"{charge_id[:40]!r} is not a charge id like 'ch_' + 24 hex")
    if idempotency_key:
        check_idempotency_key(idempotency_key)
        if charge_id and charge_id != charge_id_for(idempotency_key):
            raise FieldError("charge_id", "is not the charge of this idempotency_key")
    return charge_id, idempotency_key
