"""Benchmarks: each prints a table and writes JSON. Run them with ``tiered-memory bench``."""
