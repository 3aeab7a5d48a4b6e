"""Tool-use environment synthesis (`rlclimb run tool-envs`): bootstrap an environment from a
plain-English description, make tasks from chains of its tools, verify them by replay."""
