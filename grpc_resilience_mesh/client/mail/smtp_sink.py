"""A local SMTP server that keeps what it receives: `python -m
grpc_resilience_mesh.client.mail.smtp_sink`.

Each accepted message becomes <dir>/<n>-<charge>.eml; every DATA (accepted or refused) is a line of
<dir>/attempts.jsonl; <dir>/script.json scripts refusals and delays
(grpc_resilience_mesh.client.mail.mailbox).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time
from email import message_from_bytes
from pathlib import Path
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session


class ScriptedHandler:
    """aiosmtpd handler: apply the script, store or refuse, log every attempt."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._seq = len(list(root.glob("*.eml")))
        self._script_mtime = -1.0
        self._rules: list[dict[str, Any]] = []
        self._used: dict[int, int] = {}

    def _load_script(self) -> list[dict[str, Any]]:
        path = self.root / "script.json"
        try:
            mtime = path.stat().st_mtime_ns / 1e9
        except FileNotFoundError:
            return []
        if mtime != self._script_mtime:
            self._script_mtime = mtime
            self._used = {}
            try:
                self._rules = list(json.loads(path.read_text()).get("rules", []))
            except (OSError, ValueError):
                self._rules = []
        return self._rules

    def _rule_for(self, keys: list[str]) -> dict[str, Any] | None:
        for index, rule in enumerate(self._load_script()):
            match = rule.get("match")
            if match and not any(match in k for k in keys):
                continue
            times = rule.get("times")
            if times is not None and self._used.get(index, 0) >= int(times):
                continue
            self._used[index] = self._used.get(index, 0) + 1
            return rule
        return None

    async def handle_RCPT(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        address: str,
        rcpt_options: list[str],
    ) -> str:
        for rule in self._load_script():  # a hold here: the client dies before DATA
            if rule.get("hold_rcpt_s") and (not rule.get("match") or rule["match"] in address):
                await asyncio.sleep(float(rule["hold_rcpt_s"]))
                break
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = (
            envelope.content
            if isinstance(envelope.content, bytes)
            else str(envelope.content).encode()
        )
        msg = message_from_bytes(raw)
        charge = str(msg.get("X-Mesh-Charge-Id", ""))
        job = str(msg.get("X-Mesh-Job-Id", ""))
        rcpts = [str(r) for r in envelope.rcpt_tos]
        rule = self._rule_for([*rcpts, charge, job])
        if rule and rule.get("delay_s"):
            await asyncio.sleep(float(rule["delay_s"]))
        code = int(rule.get("code", 250)) if rule else 250
        now = time.time()
        with (self.root / "attempts.jsonl").open("a") as log:
            log.write(
                json.dumps(
                    {"t": now, "code": code, "charge_id": charge, "job_id": job, "to": rcpts}
                )
                + "\n"
            )
        if code >= 400:
            text = "try again later" if code < 500 else "mailbox unavailable"
            return f"{code} {'4.7.0' if code < 500 else '5.1.1'} {text} (scripted)"
        self._seq += 1
        name = f"{self._seq:06d}-{charge or 'message'}.eml"
        stamped = f"X-Sink-Received-At: {now:.6f}\r\n".encode() + raw
        tmp = self.root / (name + ".tmp")
        tmp.write_bytes(stamped)
        tmp.replace(self.root / name)
        return f"250 2.0.0 OK queued as {self._seq}"


async def serve(host: str, port: int, root: Path) -> None:
    handler = ScriptedHandler(root)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: SMTP(handler, hostname="mesh-smtp-sink", ident="mesh smtp sink"), host, port
    )
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"smtp sink on {host}:{port}, mailbox {root}", flush=True)
    await stop.wait()
    server.close()
    await server.wait_closed()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--listen", default="127.0.0.1:2525")
    parser.add_argument("--dir", type=Path, default=Path("var/mailbox"))
    args = parser.parse_args()
    host, _, port = args.listen.rpartition(":")
    asyncio.run(serve(host, int(port), args.dir))


if __name__ == "__main__":
    main()
