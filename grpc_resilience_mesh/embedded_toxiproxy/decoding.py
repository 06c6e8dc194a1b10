"""Converting decoded JSON into Go-typed fields with encoding/json's rules and error wording."""

from __future__ import annotations

import math
import re
import struct
from typing import Any

from grpc_resilience_mesh.embedded_toxiproxy.errors import BAD_REQUEST_BODY, NAME_TOO_LONG, ApiError
from grpc_resilience_mesh.embedded_toxiproxy.json_reader import Number

_INTEGER = re.compile(r"-?[0-9]+")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

# Ours, not Go's: a name is part of the URL of every request about it, and the API server refuses
# request lines over 8190 bytes. Percent-encoded, 1024 UTF-8 bytes take at most 3072, so a proxy
# name and a toxic name fit in one URL together: whatever can be created can be deleted.
MAX_NAME_BYTES = 1024


def json_kind(value: Any) -> str:
    """The JSON kind Go names in "cannot unmarshal <kind>" errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Number):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _unmarshal_error(what: str, where: str, go_type: str) -> ApiError:
    detail = f"json: cannot unmarshal {what} into Go {where} of type {go_type}"
    return BAD_REQUEST_BODY.joined(detail)


def expect_object(value: Any, go_type: str, where: str = "value") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _unmarshal_error(json_kind(value), where, go_type)
    return value


def check_name_length(name: str, what: str) -> None:
    size = len(name.encode("utf-8", errors="surrogatepass"))
    if size > MAX_NAME_BYTES:
        raise NAME_TOO_LONG.joined(
            f"{what} is {size} bytes (UTF-8); at most {MAX_NAME_BYTES}, so that it fits in a URL"
        )


def get_str(obj: dict[str, Any], key: str, struct_name: str, default: str) -> str:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _unmarshal_error(json_kind(value), f"struct field {struct_name}.{key}", "string")
    return value


def get_bool(obj: dict[str, Any], key: str, struct_name: str, default: bool) -> bool:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _unmarshal_error(json_kind(value), f"struct field {struct_name}.{key}", "bool")
    return value


def get_float32(obj: dict[str, Any], key: str, struct_name: str, default: float) -> float:
    """Go's float32 field: any JSON number within float32's range (so never NaN or infinite)."""
    value = obj.get(key)
    if value is None:
        return default
    where = f"struct field {struct_name}.{key}"
    if not isinstance(value, Number):
        raise _unmarshal_error(json_kind(value), where, "float32")
    number = float(value.literal)
    try:
        # Rounds to float32 as strconv.ParseFloat(s, 32) does; too large to round is an error.
        struct.pack("<f", number)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise _unmarshal_error(f"number {value.literal}", where, "float32")
    return number


def get_int(
    obj: dict[str, Any], key: str, struct_name: str, default: int, go_type: str = "int64"
) -> int:
    """Go's int/int64 field (64-bit): an integer literal (not 1.0, not 1e3) that fits in int64."""
    value = obj.get(key)
    if value is None:
        return default
    where = f"struct field {struct_name}.{key}"
    if not isinstance(value, Number):
        raise _unmarshal_error(json_kind(value), where, go_type)
    literal = value.literal
    # 20 characters hold every int64; the check keeps int() away from huge digit strings.
    if len(literal) > 20 or not _INTEGER.fullmatch(literal):
        raise _unmarshal_error(f"number {literal}", where, go_type)
    number = int(literal)
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise _unmarshal_error(f"number {literal}", where, go_type)
    return number
