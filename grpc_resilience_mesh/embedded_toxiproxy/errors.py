"""Toxiproxy's API errors: the exact messages and HTTP statuses its clients expect."""

from __future__ import annotations

import json
from typing import Any


class ApiError(Exception):
    """An error the HTTP API reports as `{"error": message, "status": status}`."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def to_json(self) -> dict[str, Any]:
        return {"error": self.message, "status": self.status}

    def body(self) -> str:
        # Go's http.Error appends a newline to the JSON text; clients that compare bodies see it.
        return json.dumps(self.to_json(), separators=(",", ":"), allow_nan=False) + "\n"

    def joined(self, detail: str) -> ApiError:
        """Toxiproxy's joinError: `"<message>: <detail>"` with this error's status."""
        return ApiError(f"{self.message}: {detail}", self.status)


BAD_REQUEST_BODY = ApiError("bad request body", 400)
MISSING_FIELD = ApiError("missing required field", 400)
PROXY_NOT_FOUND = ApiError("proxy not found", 404)
PROXY_ALREADY_EXISTS = ApiError("proxy already exists", 409)
INVALID_STREAM = ApiError("stream was invalid, can be either upstream or downstream", 400)
INVALID_TOXIC_TYPE = ApiError("invalid toxic type", 400)
TOXIC_ALREADY_EXISTS = ApiError("toxic already exists", 409)
TOXIC_NOT_FOUND = ApiError("toxic not found", 404)
# Ours, not Toxiproxy's: see README "Differences from Toxiproxy".
NAME_TOO_LONG = ApiError("name too long", 400)
NON_LOOPBACK_LISTEN = ApiError("listen address is not loopback", 400)


def internal(message: str) -> ApiError:
    """An error Toxiproxy had no status for: it reports those as 500 with the Go error text."""
    return ApiError(message, 500)
