"""Which project files one call runs through: a profile hook over the whole process (every
thread and task of the in-process services), restricted to the product's own modules."""

from __future__ import annotations

import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ROOT / "grpc_resilience_mesh" / "services"
LIBRARY = ROOT / "libs" / "grpc-aio-resilience" / "src"
"""The resilience library: part of every call's route too, though a distribution of its own."""
GENERATED = PRODUCT / "v1"


async def files_run_by(call: Callable[[], Awaitable[Any]]) -> list[str]:
    """The product's files (repo-relative, generated stubs left out) whose functions ran
    while `call` ran, in the order each first ran."""
    seen: dict[str, None] = {}
    product, generated = (str(PRODUCT), str(LIBRARY)), str(GENERATED)

    def hook(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        name = frame.f_code.co_filename
        if name.startswith(product) and not name.startswith(generated) and name not in seen:
            seen[name] = None

    sys.setprofile(hook)
    threading.setprofile(hook)
    try:
        await call()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return [str(Path(f).relative_to(ROOT)) for f in seen]
