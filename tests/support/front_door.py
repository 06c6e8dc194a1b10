"""What the front-door tests (in-process and against the whole mesh) send: keys and sizes."""

from __future__ import annotations

MAX_BYTES = 1024 * 1024
"""The services' default MAX_MESSAGE_BYTES."""
SIZE_OPTIONS = [
    ("grpc.max_send_message_length", 4 * MAX_BYTES),
    ("grpc.max_receive_message_length", 4 * MAX_BYTES),
]
"""A client channel that can send and receive past the services' limit, to test the limit."""


def bearer(key: str) -> tuple[tuple[str, str], ...]:
    """The gateway's API-key metadata."""
    return (("authorization", f"Bearer {key}"),)
