"""The load generator process: a plan in, compact outcome records out (chaos/load.py drives it)."""
