"""Benchmarks for the chaos tooling (run them, they are not tests)."""
