from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChargeStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CHARGE_STATUS_UNSPECIFIED: _ClassVar[ChargeStatus]
    CHARGE_STATUS_SUCCEEDED: _ClassVar[ChargeStatus]
    CHARGE_STATUS_DECLINED: _ClassVar[ChargeStatus]
    CHARGE_STATUS_PENDING: _ClassVar[ChargeStatus]
CHARGE_STATUS_UNSPECIFIED: ChargeStatus
CHARGE_STATUS_SUCCEEDED: ChargeStatus
CHARGE_STATUS_DECLINED: ChargeStatus
CHARGE_STATUS_PENDING: ChargeStatus

class ChargeRequest(_message.Message):
    __slots__ = ("user_id", "amount_cents", "currency", "idempotency_key")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_CENTS_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    amount_cents: int
    currency: str
    idempotency_key: str
    def __init__(self, user_id: _Optional[str] = ..., amount_cents: _Optional[int] = ..., currency: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class Charge(_message.Message):
    __slots__ = ("charge_id", "user_id", "amount_cents", "currency", "idempotency_key", "status", "decline_reason", "created_at")
    CHARGE_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    AMOUNT_CENTS_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DECLINE_REASON_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    charge_id: str
    user_id: str
    amount_cents: int
    currency: str
    idempotency_key: str
    status: ChargeStatus
    decline_reason: str
    created_at: float
    def __init__(self, charge_id: _Optional[str] = ..., user_id: _Optional[str] = ..., amount_cents: _Optional[int] = ..., currency: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., status: _Optional[_Union[ChargeStatus, str]] = ..., decline_reason: _Optional[str] = ..., created_at: _Optional[float] = ...) -> None: ...

class ChargeResponse(_message.Message):
    __slots__ = ("charge", "replayed")
    CHARGE_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    charge: Charge
    replayed: bool
    def __init__(self, charge: _Optional[_Union[Charge, _Mapping]] = ..., replayed: _Optional[bool] = ...) -> None: ...

class GetChargeRequest(_message.Message):
    __slots__ = ("charge_id", "idempotency_key")
    CHARGE_ID_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    charge_id: str
    idempotency_key: str
    def __init__(self, charge_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...
