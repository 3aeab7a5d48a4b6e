"""rlclimb.pipelines: the stage engine, the LLM client, pipeline definitions and the CLI."""
