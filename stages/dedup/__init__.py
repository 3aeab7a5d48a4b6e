"""Dedup (exact, MinHash, vector) and benchmark decontamination."""
