"""Every shell block of README.md and docs/quickstart.md runs as written, the way its mark says
(tests/e2e/docs_blocks.py); a block without a mark fails, so a new command cannot slip in unrun.

The slow commands (`make demo`, `make test`, a whole `mesh chaos run`, `make verify`) run only in
the rehearsal: `MESH_DOCS_REHEARSAL=1 .venv/bin/python -m pytest -m rehearsal
tests/e2e/test_docs_commands.py`, on a fresh `git clone` of this checkout (about half an hour)."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.docs_blocks import DOCS, MODES, ROOT, Line, shell_blocks
from tests.e2e.test_quickstart_toxiproxy import HEADING, user_folder
from tests.support.polling import wait_until

pytestmark = pytest.mark.e2e
REHEARSAL = os.environ.get("MESH_DOCS_REHEARSAL") == "1"
MESH_UP = re.compile(r"\bmesh up\b")


def test_every_shell_block_is_marked_with_how_it_runs() -> None:
    for doc in DOCS:
        for block in shell_blocks(doc):
            assert block.mode in MODES, (
                f"{block.where}: a shell block needs a mark on the line before it, "
                f"<!-- run: MODE --> with MODE one of {sorted(MODES)} (tests/e2e/docs_blocks.py)"
            )
            assert block.lines, f"{block.where}: a shell block with no `$ ` command"
    toxiproxy = [b for d in DOCS for b in shell_blocks(d) if b.mode == "toxiproxy-client"]
    quickstart = DOCS[1].read_text()
    section = quickstart[quickstart.index(HEADING) :]
    assert toxiproxy and all(b.doc == DOCS[1] for b in toxiproxy)
    assert all(b.line > quickstart[: quickstart.index(HEADING)].count("\n") for b in toxiproxy)
    assert section.count("<!-- run: toxiproxy-client -->") == len(toxiproxy)


class DocRun:
    """One doc's `mesh` blocks run in order in `folder`; its `mesh up` kept running to the end."""

    def __init__(self, folder: Path, rehearsal: bool) -> None:
        self.folder, self.rehearsal = folder, rehearsal
        self.mesh: subprocess.Popen[bytes] | None = None
        self.outputs: list[str] = []
        hidden = ("MESH_STATE_DIR", "MESH_DOCS_REHEARSAL")  # a rehearsal's `make test`: not again
        self.env = {k: v for k, v in os.environ.items() if k not in hidden}
        self.env["PATH"] = f"{Path(sys.executable).parent}:{self.env.get('PATH', '')}"
        self.timeout_s = 3600.0 if rehearsal else 120.0

    def run(self, line: Line) -> None:
        command = self.filled(line)
        if MESH_UP.search(command.split(" #")[0]):
            self.start_mesh(command)
        elif line.until is not None:
            self.until(command, line.until)
        else:
            done = subprocess.run(
                ["bash", "-e", "-c", command],
                cwd=self.folder,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
            )
            self.outputs.append(done.stdout + done.stderr)
            assert done.returncode == 0, f"{command}\n{self.outputs[-1]}"

    def filled(self, line: Line) -> str:
        command = line.command
        for placeholder, pattern in line.fills.items():
            found = re.search(pattern, "\n".join(self.outputs))
            assert found, f"{command}: nothing before it printed /{pattern}/"
            command = command.replace(placeholder, found.group(1))
        return command

    def background(self, command: str, log: Path) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            return subprocess.Popen(
                ["bash", "-c", f"exec {command}"],
                cwd=self.folder,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def start_mesh(self, command: str) -> None:
        assert self.mesh is None, "one `mesh up` per doc"
        log = self.folder / "mesh-up.log"
        self.mesh = self.background(command.split(" #")[0] + " --auto-ports", log)
        state = self.folder / "var" / "mesh.json"

        def up() -> bool:
            assert self.mesh is not None and self.mesh.poll() is None, log.read_text()
            return state.exists()

        wait_until(up, 120, f"{command}: var/mesh.json", 0.1)

    def until(self, command: str, text: str) -> None:
        """The line in a terminal, as a user runs it (rich redraws a live view only on one),
        until its output shows `text`; then Ctrl-C."""
        main, side = pty.openpty()
        proc = subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=self.folder,
            env={**self.env, "COLUMNS": "120"},
            stdin=side,
            stdout=side,
            stderr=side,
        )
        os.close(side)
        seen = bytearray()

        def shown() -> bool:
            while select.select([main], [], [], 0)[0]:
                try:
                    chunk = os.read(main, 65536)
                except OSError:  # the terminal's other side closed: the command ended
                    break
                if not chunk:
                    break
                seen.extend(chunk)
            return text.encode() in seen or proc.poll() is not None

        try:
            wait_until(shown, 60, f"{command}: {text}")
        finally:
            stop(proc)
            os.close(main)
        self.outputs.append(seen.decode(errors="replace"))
        assert text.encode() in seen, f"{command} ended without showing {text!r}: {bytes(seen)!r}"

    def close(self) -> None:
        if self.mesh is not None:
            stop(self.mesh)
            self.mesh = None


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Ctrl-C, by PID; the process must be gone within 30 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)


def clone_like(tmp_path: Path) -> Path:
    """A folder laid out as a clone after `make demo`: this checkout's files (linked, read only
    by the commands) and `.venv/bin/mesh` running this checkout's `mesh`; its own var/."""
    folder = user_folder(tmp_path)
    for entry in ROOT.iterdir():
        if entry.name not in {".venv", "var", "reports", ".git"} and not entry.name.startswith("."):
            (folder / entry.name).symlink_to(entry)
    return folder


def run_doc(doc: Path, folder: Path, rehearsal: bool) -> int:
    """Run the doc's lines in order (the rehearsal's too, in a rehearsal); how many ran."""
    runner = DocRun(folder, rehearsal)
    ran = 0
    try:
        for block in shell_blocks(doc):
            if block.mode == "toxiproxy-client":
                continue
            for line in block.lines:
                if (line.rehearsal or block.mode == "rehearsal") and not rehearsal:
                    continue
                runner.run(line)
                ran += 1
    finally:
        runner.close()
    return ran


@pytest.mark.timeout(300)  # a mesh up and some 20 commands, each a process that imports the CLI
@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_the_docs_commands_run_as_written(doc: Path, tmp_path: Path) -> None:
    assert run_doc(doc, clone_like(tmp_path), rehearsal=False) > 0


@pytest.mark.rehearsal
@pytest.mark.timeout(7200)
@pytest.mark.skipif(not REHEARSAL, reason="slow: MESH_DOCS_REHEARSAL=1 -m rehearsal runs it")
@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_the_docs_slow_commands_run_on_a_fresh_clone(doc: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    assert run_doc(doc, clone, rehearsal=True) > 0
