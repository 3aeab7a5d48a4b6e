"""Curation: cleanup, classification, conversion and the stem-curate stages."""
