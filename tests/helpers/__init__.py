"""Helpers for the test suite (importable by spawned worker processes: tests/ is on sys.path)."""
