"""SWE environments built from pull requests: per-language rules (`lang`), grading and the
runtime environment (`grading`, `env`). Images and records come from `rlclimb.stages.swe`."""
