from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Fault(_message.Message):
    __slots__ = ("method", "error_rate", "code", "delay_s", "pushback_ms", "after_messages", "first_attempt_only", "service_time_factor")
    METHOD_FIELD_NUMBER: _ClassVar[int]
    ERROR_RATE_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    DELAY_S_FIELD_NUMBER: _ClassVar[int]
    PUSHBACK_MS_FIELD_NUMBER: _ClassVar[int]
    AFTER_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    FIRST_ATTEMPT_ONLY_FIELD_NUMBER: _ClassVar[int]
    SERVICE_TIME_FACTOR_FIELD_NUMBER: _ClassVar[int]
    method: str
    error_rate: float
    code: str
    delay_s: float
    pushback_ms: int
    after_messages: int
    first_attempt_only: bool
    service_time_factor: float
    def __init__(self, method: _Optional[str] = ..., error_rate: _Optional[float] = ..., code: _Optional[str] = ..., delay_s: _Optional[float] = ..., pushback_ms: _Optional[int] = ..., after_messages: _Optional[int] = ..., first_attempt_only: _Optional[bool] = ..., service_time_factor: _Optional[float] = ...) -> None: ...

class SetFaultRequest(_message.Message):
    __slots__ = ("fault",)
    FAULT_FIELD_NUMBER: _ClassVar[int]
    fault: Fault
    def __init__(self, fault: _Optional[_Union[Fault, _Mapping]] = ...) -> None: ...

class ClearFaultsRequest(_message.Message):
    __slots__ = ("method",)
    METHOD_FIELD_NUMBER: _ClassVar[int]
    method: str
    def __init__(self, method: _Optional[str] = ...) -> None: ...

class ListFaultsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FaultList(_message.Message):
    __slots__ = ("faults",)
    FAULTS_FIELD_NUMBER: _ClassVar[int]
    faults: _containers.RepeatedCompositeFieldContainer[Fault]
    def __init__(self, faults: _Optional[_Iterable[_Union[Fault, _Mapping]]] = ...) -> None: ...

class SetPolicyRequest(_message.Message):
    __slots__ = ("yaml",)
    YAML_FIELD_NUMBER: _ClassVar[int]
    yaml: str
    def __init__(self, yaml: _Optional[str] = ...) -> None: ...

class GetPolicyRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PolicyInfo(_message.Message):
    __slots__ = ("name", "yaml")
    NAME_FIELD_NUMBER: _ClassVar[int]
    YAML_FIELD_NUMBER: _ClassVar[int]
    name: str
    yaml: str
    def __init__(self, name: _Optional[str] = ..., yaml: _Optional[str] = ...) -> None: ...
