"""Log lines a caller can provoke at will, cut to one per interval.

grpc decodes every non-binary metadata value as UTF-8 before any interceptor runs; a value that
is not UTF-8 (`authorization: Bearer \\xff`, sent with a raw HTTP/2 client) is logged by grpc's
`grpc._cython.cygrpc` logger at ERROR with a full traceback, once per call, and then decoded as
latin-1. The call itself goes on: such a key never matches, so AuthInterceptor answers
UNAUTHENTICATED. Without a limit, anyone who can reach the port writes tracebacks into the log
as fast as they can send calls, unauthenticated. This filter lets one short line through per
interval, without the traceback and the attacker's bytes, saying how many it held back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

GRPC_LOGGER = "grpc._cython.cygrpc"
INVALID_ENCODING_MSG = "Invalid encoding on %s"
"""grpc's message (grpc_string.pyx.pxi `_decode`) for metadata that is not UTF-8."""
INTERVAL_S = 60.0


class InvalidMetadataLogLimit(logging.Filter):
    """At most one WARNING line per `interval_s` for grpc's "Invalid encoding" records."""

    def __init__(
        self, interval_s: float = INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._clock = clock
        self._next_at: float | None = None
        self.held_back = 0
        """Records dropped since the last line let through."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != INVALID_ENCODING_MSG:
            return True
        now = self._clock()
        if self._next_at is not None and now < self._next_at:
            self.held_back += 1
            return False
        self._next_at = now + self.interval_s
        record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        record.msg = (
            "metadata value that is not valid UTF-8 (decoded as latin-1; a key sent like that "
            "never matches); %d held back since the previous such line, at most one per %g s"
        )
        record.args = (self.held_back, self.interval_s)
        record.exc_info, record.exc_text = None, None
        self.held_back = 0
        return True


def limit_invalid_metadata_logs(interval_s: float = INTERVAL_S) -> InvalidMetadataLogLimit:
    """Installs the filter on grpc's logger once (idempotent); returns the one installed."""
    logger = logging.getLogger(GRPC_LOGGER)
    for existing in logger.filters:
        if isinstance(existing, InvalidMetadataLogLimit):
            return existing
    limit = InvalidMetadataLogLimit(interval_s)
    logger.addFilter(limit)
    return limit
