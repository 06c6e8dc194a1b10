"""The client and server policies the model can switch on: the cures of a retry storm.

Each mirrors the library's strategy with the full policy's numbers (services/policies/
full.yaml), reduced to what changes the storm's dynamics: who is sent, who is refused."""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Cures:
    """Which cures are on; all off is the `retry-only` policy."""

    budget: bool = False
    """gRFC A6 retry budget: 10 tokens, a failure costs 1, a success returns 0.1."""
    throttle: bool = False
    """Google SRE client throttle, k = 2 over a 10 s window, from 10 requests on."""
    admission: bool = False
    """The adaptive limit's deadline-aware admission: a replica refuses (with pushback) an
    attempt whose expected wait plus service would outlive the attempt's timeout."""

    @property
    def name(self) -> str:
        on = [n for n in ("budget", "throttle", "admission") if getattr(self, n)]
        return "+".join(on) if on else "retry-only"


RETRY_ONLY = Cures()
FULL = Cures(budget=True, throttle=True, admission=True)
ALL_CURES = (
    RETRY_ONLY,
    Cures(budget=True),
    Cures(throttle=True),
    Cures(admission=True),
    FULL,
)


class RetryBudget:
    """Retries only while tokens > max / 2 (gRFC A6)."""

    def __init__(self, max_tokens: float = 10.0, ratio: float = 0.1) -> None:
        self._max = max_tokens
        self._ratio = ratio
        self.tokens = max_tokens

    def failed(self) -> None:
        self.tokens = max(0.0, self.tokens - 1.0)

    def succeeded(self) -> None:
        self.tokens = min(self._max, self.tokens + self._ratio)

    def allows_retry(self) -> bool:
        return self.tokens > self._max / 2


class ClientThrottle:
    """Rejects an attempt with probability max(0, (requests - k * accepts) / (requests + 1)).

    An accept is an attempt not refused for overload: a timed-out attempt counts as accepted,
    as in the library, so the throttle sees a storm only once the replicas' queues refuse."""

    def __init__(self, rng: random.Random, k: float = 2.0, window_s: float = 10.0) -> None:
        self._rng = rng
        self._k = k
        self._window_s = window_s
        self._min_requests = 10
        self._seen: deque[tuple[float, bool]] = deque()
        self._accepts = 0

    def _forget(self, now_s: float) -> None:
        while self._seen and self._seen[0][0] < now_s - self._window_s:
            _, accepted = self._seen.popleft()
            self._accepts -= accepted

    def admits(self, now_s: float) -> bool:
        """Whether to send; a local rejection is recorded as a request not accepted."""
        self._forget(now_s)
        requests = len(self._seen)
        p = max(0.0, (requests - self._k * self._accepts) / (requests + 1))
        if requests >= self._min_requests and self._rng.random() < p:
            self._seen.append((now_s, False))
            return False
        return True

    def record(self, now_s: float, accepted: bool) -> None:
        self._seen.append((now_s, accepted))
        self._accepts += accepted
