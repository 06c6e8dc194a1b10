"""The load generator process: a plan in, compact outcome records out (loadgen/in_process.py drives
it)."""
