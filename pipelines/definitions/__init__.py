"""Pipeline definitions: one short module per source kind."""
