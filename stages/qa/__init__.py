"""QA dumps: import."""
