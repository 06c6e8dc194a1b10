"""Send one receipt by SMTP, and say whether a failure is worth retrying.

Transient (retry with backoff): a 4xx reply, a refused or reset connection, a timeout.
Permanent (fail the job now): a 5xx reply. smtplib blocks, so sends run on a pool sized to the
worker's concurrency (asyncio's default pool is min(32, cpus + 4): too small for 10 at once).
"""

from __future__ import annotations

import asyncio
import smtplib
from concurrent.futures import ThreadPoolExecutor
from email.message import EmailMessage
from email.utils import formatdate

from grpc_resilience_mesh.services.contracts.receipt_job import Receipt, job_id_for
from grpc_resilience_mesh.services.customers import User


class SendError(Exception):
    """Sending failed; `transient` says whether another attempt may succeed."""

    def __init__(self, message: str, *, transient: bool, code: int | None = None) -> None:
        super().__init__(message)
        self.transient = transient
        self.code = code


def message_id(receipt: Receipt) -> str:
    """One Message-ID per charge, so a mailbox or provider can spot a duplicate."""
    return f"<{job_id_for(receipt.charge_id)}@mesh.local>"


def render(receipt: Receipt, user: User, sender: str, job_id: str) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = user.email
    msg["Subject"] = f"Your receipt for {receipt.amount_cents / 100:.2f} {receipt.currency}"
    msg["Date"] = formatdate(localtime=False)
    msg["Message-ID"] = message_id(receipt)
    msg["X-Mesh-Charge-Id"] = receipt.charge_id
    msg["X-Mesh-Job-Id"] = job_id
    msg.set_content(
        f"Hello {user.display_name},\n\nwe charged {receipt.amount_cents / 100:.2f} "
        f"{receipt.currency} (charge {receipt.charge_id}).\n\nThank you.\n"
    )
    return msg


class SmtpSender:
    """smtplib on a dedicated thread pool; one connection per message."""

    def __init__(self, addr: str, timeout_s: float, threads: int) -> None:
        host, _, port = addr.rpartition(":")
        self._host, self._port = host, int(port)
        self._timeout_s = timeout_s
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="smtp")

    async def send(self, msg: EmailMessage) -> None:
        await asyncio.get_running_loop().run_in_executor(self._pool, self._send_sync, msg)

    def _send_sync(self, msg: EmailMessage) -> None:
        try:
            with smtplib.SMTP(self._host, self._port, timeout=self._timeout_s) as smtp:
                smtp.send_message(msg)
        except smtplib.SMTPRecipientsRefused as err:
            code, reply = next(iter(err.recipients.values()))
            raise _classified(code, reply) from err
        except smtplib.SMTPResponseException as err:
            raise _classified(err.smtp_code, err.smtp_error) from err
        except (smtplib.SMTPServerDisconnected, TimeoutError, OSError) as err:
            raise SendError(f"smtp: {type(err).__name__}: {err}", transient=True) from err

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _classified(code: int, reply: bytes | str) -> SendError:
    text = reply.decode(errors="replace") if isinstance(reply, bytes) else str(reply)
    return SendError(f"smtp {code}: {text}", transient=not 500 <= code < 600, code=code)
