"""Difficulty scoring: solve by model tiers, difficulty bins, blind grading, guessability."""
