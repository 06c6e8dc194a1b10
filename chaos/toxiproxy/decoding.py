"""Reading request bodies with Go encoding/json's rules and error wording (as Toxiproxy reports)."""

from __future__ import annotations

import json
from typing import Any

from chaos.toxiproxy.errors import BAD_REQUEST_BODY, ApiError


def json_kind(value: Any) -> str:
    """The JSON kind Go names in "cannot unmarshal <kind>" errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def parse_body(raw: bytes) -> Any:
    """Decode a body; Go's decoder reads one value, so an empty body is `EOF`."""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        raise BAD_REQUEST_BODY.joined("EOF")
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError as exc:
        raise BAD_REQUEST_BODY.joined(f"invalid JSON: {exc.msg} at offset {exc.pos}") from None
    return value


def _unmarshal_error(value: Any, where: str, go_type: str) -> ApiError:
    return BAD_REQUEST_BODY.joined(
        f"json: cannot unmarshal {json_kind(value)} into Go {where} of type {go_type}"
    )


def expect_object(value: Any, go_type: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _unmarshal_error(value, "value", go_type)
    return value


def get_str(obj: dict[str, Any], key: str, struct: str, default: str) -> str:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _unmarshal_error(value, f"struct field {struct}.{key}", "string")
    return value


def get_bool(obj: dict[str, Any], key: str, struct: str, default: bool) -> bool:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _unmarshal_error(value, f"struct field {struct}.{key}", "bool")
    return value


def get_float(obj: dict[str, Any], key: str, struct: str, default: float) -> float:
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _unmarshal_error(value, f"struct field {struct}.{key}", "float32")
    return float(value)


def get_int(obj: dict[str, Any], key: str, struct: str, default: int) -> int:
    value = obj.get(key)
    if value is None:
        return default
    # Go refuses 1.5 and even 1.0 for an integer field; Python's json gives floats for both.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _unmarshal_error(value, f"struct field {struct}.{key}", "int64")
    return value
