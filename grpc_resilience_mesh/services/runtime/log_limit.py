"""Log lines a caller can provoke at will, cut to one per interval.

grpc decodes every non-binary metadata value as UTF-8 before any interceptor runs; a value that
is not UTF-8 (`authorization: Bearer \\xff`, sent with a raw HTTP/2 client) is logged by grpc's
`grpc._cython.cygrpc` logger at ERROR with a full traceback, once per call, and then decoded as
latin-1. The call itself goes on: such a key never matches, so AuthInterceptor answers
UNAUTHENTICATED. Without a limit, anyone who can reach the port writes tracebacks into the log
as fast as they can send calls, unauthenticated. This filter lets one short line through per
interval, without the traceback and the attacker's bytes, saying how many it held back.

An answer sent to a call whose deadline passed while the handler was still working fails in
grpc core, and unless grpc.aio has already seen the end of the call (a race) it logs
"ExecuteBatchError raised in core by servicer method [...]" at ERROR with a traceback through
every layer (about 4.9 KB in the gateway). Nobody waits for that answer any more, so
`EndedCallLogLimit` turns those into one short INFO line per interval. The same record before
the call's deadline (an answer over the size limit, say) keeps its traceback, as does any other.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import TypeVar

from grpc._cython.cygrpc import ExecuteBatchError

from grpc_aio_resilience import served_deadline

GRPC_LOGGER = "grpc._cython.cygrpc"
INVALID_ENCODING_MSG = "Invalid encoding on %s"
"""grpc's message (grpc_string.pyx.pxi `_decode`) for metadata that is not UTF-8."""
ENDED_CALL_MSG = re.compile(r"ExecuteBatchError raised in core by servicer method \[(.{0,200})\]")
"""grpc's message (aio/server.pyx.pxi `_handle_exceptions`), formatted before it is logged."""
INTERVAL_S = 60.0


class _OneLinePerInterval(logging.Filter):
    """Lets one of the records it `picks` through per `interval_s`, rewritten into one short
    line by `shorten` (no traceback), and counts the others in `held_back`."""

    level = logging.WARNING

    def __init__(
        self, interval_s: float = INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.interval_s = interval_s
        self._clock = clock
        self._next_at: float | None = None
        self.held_back = 0
        """Records dropped since the last line let through."""

    def picks(self, record: logging.LogRecord) -> bool:
        raise NotImplementedError

    def shorten(self, record: logging.LogRecord) -> None:
        raise NotImplementedError

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.picks(record):
            return True
        now = self._clock()
        if self._next_at is not None and now < self._next_at:
            self.held_back += 1
            return False
        self._next_at = now + self.interval_s
        self.shorten(record)
        record.levelno, record.levelname = self.level, logging.getLevelName(self.level)
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        self.held_back = 0
        return True


_F = TypeVar("_F", bound=_OneLinePerInterval)


class InvalidMetadataLogLimit(_OneLinePerInterval):
    """At most one WARNING line per `interval_s` for grpc's "Invalid encoding" records."""

    def picks(self, record: logging.LogRecord) -> bool:
        return record.msg == INVALID_ENCODING_MSG

    def shorten(self, record: logging.LogRecord) -> None:
        record.msg = (
            "metadata value that is not valid UTF-8 (decoded as latin-1; a key sent like that "
            "never matches); %d held back since the previous such line, at most one per %g s"
        )
        record.args = (self.held_back, self.interval_s)


class EndedCallLogLimit(_OneLinePerInterval):
    """At most one INFO line per `interval_s`, without a traceback, for grpc's records of an
    answer that core refused because the call's deadline had passed (read off the task's
    `served_deadline`; such a record before the deadline keeps its traceback)."""

    level = logging.INFO

    def picks(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, ExecuteBatchError) or not isinstance(record.msg, str):
            return False
        deadline_s = served_deadline()
        if deadline_s is None or time.monotonic() < deadline_s:
            return False  # not out of time: a real failure (an answer over the size limit...)
        return ENDED_CALL_MSG.fullmatch(record.msg) is not None

    def shorten(self, record: logging.LogRecord) -> None:
        found = ENDED_CALL_MSG.fullmatch(record.msg)
        record.msg = (
            "an answer to %s was not sent: its deadline had passed and grpc core had ended the "
            "call; %d held back since the previous such line, at most one per %g s"
        )
        record.args = (found[1] if found else "?", self.held_back, self.interval_s)


def limit_invalid_metadata_logs(interval_s: float = INTERVAL_S) -> InvalidMetadataLogLimit:
    """Installs the filter on grpc's logger once (idempotent); returns the one installed."""
    return _install(InvalidMetadataLogLimit, interval_s)


def limit_ended_call_logs(interval_s: float = INTERVAL_S) -> EndedCallLogLimit:
    """Installs the ended-call filter on grpc's logger once (idempotent); returns it."""
    return _install(EndedCallLogLimit, interval_s)


def _install(kind: type[_F], interval_s: float) -> _F:
    logger = logging.getLogger(GRPC_LOGGER)
    for existing in logger.filters:
        if isinstance(existing, kind):
            return existing
    limit = kind(interval_s)
    logger.addFilter(limit)
    return limit
