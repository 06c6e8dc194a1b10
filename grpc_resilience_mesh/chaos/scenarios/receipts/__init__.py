"""The receipt-job experiments (receipt-backoff, receipt-throughput, worker-crash,
duplicate-enqueue, poison-job, false-stall) and the harness they share."""
