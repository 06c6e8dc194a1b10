"""PaymentService: validated, idempotent charges against the durable ledger."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import grpc
from opentelemetry import propagate

from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.contracts.charge_ids import check_charge_lookup
from grpc_resilience_mesh.services.contracts.fields import (
    check_amount,
    check_currency,
    check_idempotency_key,
    check_user_id,
    checked_fields,
    known_user,
)
from grpc_resilience_mesh.services.customers import TIER_LIMIT_CENTS, User
from grpc_resilience_mesh.services.payment.ledger import ChargeRecord, IdempotencyConflict, Ledger
from grpc_resilience_mesh.services.payment.outbox import relay_from_env
from grpc_resilience_mesh.services.runtime.refusal import abort
from grpc_resilience_mesh.services.runtime.server import Runtime, Service
from grpc_resilience_mesh.services.telemetry.job_metrics import JobMetrics
from grpc_resilience_mesh.services.v1 import payment_pb2, payment_pb2_grpc

STATUS = {
    "SUCCEEDED": payment_pb2.CHARGE_STATUS_SUCCEEDED,
    "DECLINED": payment_pb2.CHARGE_STATUS_DECLINED,
}


def decline_reason(user: User, amount_cents: int) -> str:
    """Deterministic card decisions, so experiments are reproducible."""
    if user.blocked:
        return "card_blocked"
    if amount_cents > TIER_LIMIT_CENTS[user.tier]:
        return f"over_{user.tier}_limit"
    return ""


def to_proto(record: ChargeRecord) -> payment_pb2.Charge:
    return payment_pb2.Charge(
        charge_id=record.charge_id,
        user_id=record.user_id,
        amount_cents=record.amount_cents,
        currency=record.currency,
        idempotency_key=record.idempotency_key,
        status=STATUS[record.status],
        decline_reason=record.decline_reason,
        created_at=record.created_at,
    )


class PaymentServicer(payment_pb2_grpc.PaymentServiceServicer):
    """Charge is safe to retry with the same key: the ledger maps a key to one charge."""

    def __init__(self, ledger: Ledger, on_commit: Callable[[], None] | None = None) -> None:
        self._ledger = ledger
        self._on_commit = on_commit

    async def Charge(
        self, request: payment_pb2.ChargeRequest, context: grpc.aio.ServicerContext
    ) -> payment_pb2.ChargeResponse:
        async with checked_fields(context):
            key = check_idempotency_key(request.idempotency_key)
            user_id = check_user_id(request.user_id)
            amount = check_amount(request.amount_cents)
            currency = check_currency(request.currency)
        user = known_user(user_id)
        if user is None:
            await abort(context, grpc.StatusCode.NOT_FOUND, f"user_id: no user {user_id!r}")
        trace: dict[str, str] = {}
        propagate.inject(trace)  # the receipt job continues this trace
        try:
            record, replayed = await self._ledger.charge(
                key, user_id, amount, currency, decline_reason(user, amount), trace
            )
        except IdempotencyConflict:
            await abort(
                context,
                grpc.StatusCode.ALREADY_EXISTS,
                "idempotency_key: already used for a charge with a different "
                "user, amount or currency",
            )
        if not replayed and self._on_commit is not None:
            self._on_commit()
        return payment_pb2.ChargeResponse(charge=to_proto(record), replayed=replayed)

    async def GetCharge(
        self, request: payment_pb2.GetChargeRequest, context: grpc.aio.ServicerContext
    ) -> payment_pb2.ChargeResponse:
        async with checked_fields(context):
            charge_id, key = check_charge_lookup(request.charge_id, request.idempotency_key)
        record = await self._ledger.get(charge_id, key)
        if record is None:
            await abort(
                context,
                grpc.StatusCode.NOT_FOUND,
                "charge_id: no such charge (if a checkout was PENDING, nothing was charged: "
                "retry it with the same idempotency key)",
            )
        return payment_pb2.ChargeResponse(charge=to_proto(record), replayed=True)


DB_PATH = settings.Var(
    "PAYMENT_DB_PATH",
    settings.text,
    "var/payment/ledger.sqlite3",
    "the ledger's SQLite file",
)


def ledger_path(environ: Mapping[str, str] | None = None) -> Path:
    return Path(DB_PATH.read(environ))


async def build(runtime: Runtime) -> Service:
    ledger = Ledger(ledger_path(runtime.environ))
    relay = relay_from_env(
        ledger,
        runtime.config.dependencies["redis"],
        JobMetrics(runtime.metrics.registry, "receipts"),
        runtime.environ,
    )
    relay.start()
    servicer = PaymentServicer(ledger, on_commit=relay.notify)

    async def close() -> None:
        await relay.close()
        await ledger.close()

    return Service(
        names=[payment_pb2.DESCRIPTOR.services_by_name["PaymentService"].full_name],
        register=lambda server: payment_pb2_grpc.add_PaymentServiceServicer_to_server(
            servicer, server
        ),
        close=close,
    )
