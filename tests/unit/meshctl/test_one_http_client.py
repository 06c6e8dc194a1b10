"""One HTTP client in the tooling: the stdlib's urllib (docs/architecture.md, "One way each").
aiohttp serves (the console, the embedded Toxiproxy's API) and is never a client, so reading
the services' counters loads no aiohttp and starts as fast as the runner's other imports."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TOOLING = ("grpc_resilience_mesh",)
OTHER_CLIENTS = re.compile(r"aiohttp\.ClientSession|\bClientSession\(|import httpx|http\.client")


def test_reading_the_counters_loads_no_aiohttp() -> None:
    probe = "import sys, grpc_resilience_mesh.client.counters; print('aiohttp' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"


def test_no_module_speaks_http_through_another_client() -> None:
    others = [
        str(path.relative_to(ROOT))
        for package in TOOLING
        for path in (ROOT / package).rglob("*.py")
        if OTHER_CLIENTS.search(path.read_text(encoding="utf-8"))
    ]
    assert others == []
