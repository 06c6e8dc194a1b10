"""One `mesh up` (with its console) and one headless Debian Chromium for the whole module.

Skips, naming `make browser`, only where no browser can be had: /usr/bin/chromium or the
playwright package missing. Playwright drives the system Chromium (never `playwright install`).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.mesh_up_process import MESH
from tests.support.polling import wait_until

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent / "artifacts"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class ConsoleMesh:
    proc: subprocess.Popen[str]
    state_dir: Path
    url: str
    output: list[str]
    reports_dir: Path


@pytest.fixture(scope="module")
def playwright_api() -> Any:
    """Playwright's sync API, or a skip naming the target that provides the browser (checked
    before any mesh starts)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} missing: `make browser` installs Debian's chromium")
    return pytest.importorskip(
        "playwright.sync_api", reason="playwright missing: `make browser` installs it"
    )


@pytest.fixture(scope="module")
def console_mesh(
    playwright_api: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ConsoleMesh]:
    root = tmp_path_factory.mktemp("console")
    state_dir, reports_dir = root / "var", root / "reports"
    proc = subprocess.Popen(
        [*MESH, "up", "--auto-ports", "--state-dir", str(state_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "MESH_REPORTS_DIR": str(reports_dir)},
    )
    output: list[str] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: output.extend(proc.stdout or ()), daemon=True)
    reader.start()
    try:

        def url() -> str:
            if proc.poll() is not None:
                raise AssertionError("mesh up exited early:\n" + "".join(output))
            found = re.search(r"console: (http://127\.0\.0\.1:\d+/\?token=[\w-]+)", "".join(output))
            return found.group(1) if found else ""

        address = wait_until(url, 90, "the console's address", 0.1)
        yield ConsoleMesh(proc, state_dir, address, output, reports_dir)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        reader.join(timeout=5)


@pytest.fixture(scope="module")
def browser_page(playwright_api: Any, console_mesh: ConsoleMesh) -> Iterator[object]:
    sync_api = playwright_api
    ARTIFACTS.mkdir(exist_ok=True)
    profile = tempfile.mkdtemp(prefix="console-chromium-")
    try:
        with sync_api.sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=FLAGS,
                viewport={"width": 1500, "height": 1000},
            )
            try:
                page = context.new_page()
                page.goto(console_mesh.url)
                yield page
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
