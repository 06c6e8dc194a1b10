from grpc_resilience_mesh.services.v1 import payment_pb2 as _payment_pb2
from grpc_resilience_mesh.services.v1 import profile_pb2 as _profile_pb2
from grpc_resilience_mesh.services.v1 import recommendation_pb2 as _recommendation_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetHomeRequest(_message.Message):
    __slots__ = ("user_id", "limit")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    limit: int
    def __init__(self, user_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class Degradation(_message.Message):
    __slots__ = ("part", "served_by", "code", "reason")
    PART_FIELD_NUMBER: _ClassVar[int]
    SERVED_BY_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    part: str
    served_by: str
    code: str
    reason: str
    def __init__(self, part: _Optional[str] = ..., served_by: _Optional[str] = ..., code: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class GetHomeResponse(_message.Message):
    __slots__ = ("profile", "recommendations", "degraded")
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDATIONS_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    profile: _profile_pb2.Profile
    recommendations: _containers.RepeatedCompositeFieldContainer[_recommendation_pb2.Product]
    degraded: _containers.RepeatedCompositeFieldContainer[Degradation]
    def __init__(self, profile: _Optional[_Union[_profile_pb2.Profile, _Mapping]] = ..., recommendations: _Optional[_Iterable[_Union[_recommendation_pb2.Product, _Mapping]]] = ..., degraded: _Optional[_Iterable[_Union[Degradation, _Mapping]]] = ...) -> None: ...

class CheckoutRequest(_message.Message):
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

class CheckoutResponse(_message.Message):
    __slots__ = ("charge_id", "status", "decline_reason", "replayed")
    CHARGE_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    DECLINE_REASON_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    charge_id: str
    status: _payment_pb2.ChargeStatus
    decline_reason: str
    replayed: bool
    def __init__(self, charge_id: _Optional[str] = ..., status: _Optional[_Union[_payment_pb2.ChargeStatus, str]] = ..., decline_reason: _Optional[str] = ..., replayed: _Optional[bool] = ...) -> None: ...
