"""A client of a running mesh: its counters, traces, mailbox, job queue and streams."""
