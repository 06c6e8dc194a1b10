"""May a call be retried? Read from the protobuf method options, cached per method name."""

from __future__ import annotations

from enum import Enum

from google.protobuf import descriptor_pb2, descriptor_pool

KEY_FIELD = "idempotency_key"


class RetryPermission(Enum):
    """Whether a method's calls may be sent more than once."""

    NEVER = "never"
    ALWAYS = "always"
    WITH_KEY = "with_key"


_cache: dict[str, RetryPermission] = {}


def retry_permission(method: str) -> RetryPermission:
    """NO_SIDE_EFFECTS -> ALWAYS; a request with an idempotency key field -> WITH_KEY;
    IDEMPOTENT -> ALWAYS; anything else (or a method unknown to the pool) -> NEVER."""
    permission = _cache.get(method)
    if permission is None:
        permission = _cache[method] = _lookup(method)
    return permission


def may_retry(method: str, request: object) -> bool:
    permission = retry_permission(method)
    if permission is RetryPermission.WITH_KEY:
        return bool(getattr(request, KEY_FIELD, ""))
    return permission is RetryPermission.ALWAYS


def _lookup(method: str) -> RetryPermission:
    service_name, _, method_name = method.lstrip("/").partition("/")
    try:
        service = descriptor_pool.Default().FindServiceByName(service_name)
    except KeyError:
        return RetryPermission.NEVER
    descriptor = service.methods_by_name.get(method_name)
    if descriptor is None:
        return RetryPermission.NEVER
    level = descriptor.GetOptions().idempotency_level
    if level == descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS:
        return RetryPermission.ALWAYS
    if KEY_FIELD in descriptor.input_type.fields_by_name:
        return RetryPermission.WITH_KEY
    if level == descriptor_pb2.MethodOptions.IDEMPOTENT:
        return RetryPermission.ALWAYS
    return RetryPermission.NEVER
