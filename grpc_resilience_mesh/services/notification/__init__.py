"""Receipts as background jobs: payment's outbox enqueues, this worker sends them by SMTP."""
