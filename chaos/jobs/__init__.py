"""Receipts' side of the harness: Redis and the SMTP sink as local peers, queue inspection,
and the background-job experiments."""
