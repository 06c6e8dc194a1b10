"""The suite's one way to wait for a condition: poll it, with a deadline, never a fixed sleep.

`wait_until` (sync) and `await_until` (async) call `probe` until it returns something truthy and
return that value; past `timeout_s` they fail the test with `what` in the message.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")


def wait_until(
    probe: Callable[[], T],
    timeout_s: float = 5.0,
    what: str = "condition",
    interval_s: float = 0.02,
) -> T:
    """Poll `probe` in this thread until it returns something truthy; return that value."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not reached within {timeout_s:g} s")
        time.sleep(interval_s)


@overload
async def await_until(
    probe: Callable[[], Awaitable[T]],
    timeout_s: float = ...,
    what: str = ...,
    interval_s: float = ...,
) -> T: ...


@overload
async def await_until(
    probe: Callable[[], T],
    timeout_s: float = ...,
    what: str = ...,
    interval_s: float = ...,
) -> T: ...


async def await_until(
    probe: Callable[[], Any],
    timeout_s: float = 5.0,
    what: str = "condition",
    interval_s: float = 0.005,
) -> Any:
    """Poll `probe` (plain or async) on the event loop until it returns something truthy."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not reached within {timeout_s:g} s")
        await asyncio.sleep(interval_s)
