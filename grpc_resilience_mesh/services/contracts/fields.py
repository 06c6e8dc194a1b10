r"""Request validation with field-level messages, aborting with INVALID_ARGUMENT.

Every pattern is matched whole (`fullmatch`) with ASCII classes only: `^...$` also accepts a
trailing newline (`KEY` and `KEY\n` would be two idempotency keys, so two charges) and `\d`
matches any Unicode digit (Arabic-Indic `u-١٢٣٤` would be a user id).
"""

from __future__ import annotations

import re
from types import TracebackType

import grpc

from grpc_resilience_mesh.services.contracts.limits import (
    DEFAULT_LIMIT,
    MAX_AMOUNT_CENTS,
    MAX_LIMIT,
)
from grpc_resilience_mesh.services.customers import User, customers
from grpc_resilience_mesh.services.runtime.refusal import abort

USER_ID_RE = re.compile(r"u-[0-9]{4}", re.ASCII)
IDEMPOTENCY_KEY_RE = re.compile(r"[A-Za-z0-9_.:-]{8,128}", re.ASCII)
CURRENCIES = ("USD", "EUR", "GBP", "UZS")


class FieldError(ValueError):
    """One field of a request is invalid; `field` names it."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class checked_fields:  # lower case: read as `async with checked_fields(context):`
    """Validate a request's fields inside; a FieldError ends the call with INVALID_ARGUMENT
    naming the field. Never swallows an exception, so what the block assigns is assigned."""

    def __init__(self, context: grpc.aio.ServicerContext) -> None:
        self._context = context

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        if isinstance(err, FieldError):
            await abort(self._context, grpc.StatusCode.INVALID_ARGUMENT, str(err))


def check_user_id(value: str, field: str = "user_id") -> str:
    if not value:
        raise FieldError(field, "required")
    if not USER_ID_RE.fullmatch(value):
        raise FieldError(field, f"{value[:40]!r} is not a user id like 'u-0001'")
    return value


def known_user(value: str) -> User | None:
    return customers().users.get(value)


def check_limit(value: int, field: str = "limit") -> int:
    if value == 0:
        return DEFAULT_LIMIT
    if not 1 <= value <= MAX_LIMIT:
        raise FieldError(field, f"{value} is outside 1..{MAX_LIMIT} (0 means {DEFAULT_LIMIT})")
    return value


def check_amount(value: int, field: str = "amount_cents") -> int:
    if value <= 0:
        raise FieldError(field, f"{value} must be positive")
    if value > MAX_AMOUNT_CENTS:
        raise FieldError(field, f"{value} exceeds the maximum of {MAX_AMOUNT_CENTS}")
    return value


def check_currency(value: str, field: str = "currency") -> str:
    if value not in CURRENCIES:
        shown = value[:10] if value else "(empty)"
        raise FieldError(field, f"{shown!r} is not one of {', '.join(CURRENCIES)}")
    return value


def check_idempotency_key(value: str, field: str = "idempotency_key") -> str:
    if not value:
        raise FieldError(field, "required: it makes a retried checkout charge once")
    if not IDEMPOTENCY_KEY_RE.fullmatch(value):
        raise FieldError(field, "must be 8..128 characters of A-Z a-z 0-9 _ . : -")
    return value
