"""Coding problems: import and sandbox verification."""
