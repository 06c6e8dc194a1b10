"""The SMTP sink's files: accepted messages (`*.eml`), every DATA attempt (`attempts.jsonl`)
and the reply script (`script.json`).

Script format (experiments write it; the sink rereads it when it changes):
    {"rules": [{"code": 421, "times": 2, "match": "ch_abc"},
               {"code": 550, "match": "u-0007"},
               {"delay_s": 0.1},
               {"hold_rcpt_s": 5, "match": "someone@example.test"}]}
A rule applies to a message whose recipient, charge id or job id contains `match` (every
message without one), `times` times (always without it); `delay_s` holds the reply. The
first rule that applies decides; codes 4xx/5xx refuse the message, otherwise it is accepted.
`hold_rcpt_s` holds the reply to RCPT TO (a client killed then never sends the message).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Mail:
    """One accepted message."""

    path: Path
    received_at: float
    to: str
    subject: str
    charge_id: str
    job_id: str
    message_id: str


class Mailbox:
    """<state_dir>/mailbox: what the sink accepted and what it refused."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def script_path(self) -> Path:
        return self.root / "script.json"

    @property
    def attempts_path(self) -> Path:
        return self.root / "attempts.jsonl"

    def set_script(self, rules: list[dict[str, Any]]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.script_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"rules": rules}))
        tmp.replace(self.script_path)

    def clear_script(self) -> None:
        self.set_script([])

    def messages(self) -> list[Mail]:
        mails = []
        for path in sorted(self.root.glob("*.eml")):
            msg: Message = message_from_bytes(path.read_bytes())
            mails.append(
                Mail(
                    path=path,
                    received_at=float(msg.get("X-Sink-Received-At", "0")),
                    to=str(msg.get("To", "")),
                    subject=str(msg.get("Subject", "")),
                    charge_id=str(msg.get("X-Mesh-Charge-Id", "")),
                    job_id=str(msg.get("X-Mesh-Job-Id", "")),
                    message_id=str(msg.get("Message-ID", "")),
                )
            )
        return sorted(mails, key=lambda m: m.received_at)

    def attempts(self) -> list[dict[str, Any]]:
        if not self.attempts_path.exists():
            return []
        rows = []
        for line in self.attempts_path.read_text().splitlines():
            if line.strip():
                rows.append(json.loads(line))
        return rows
