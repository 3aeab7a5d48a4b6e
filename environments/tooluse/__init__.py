"""Tool-use environments (DESIGN.md "Tool-use environments"): a directory format, a sandboxed
runtime for the untrusted tools, canonical state hashing, graders, and tau-bench interop.

    from rlclimb.environments.tooluse.format import load_env, save_env    # ToolEnvSpec, ToolTask
    from rlclimb.environments.tooluse.runtime import ToolRuntime, replay   # ReplayResult
    from rlclimb.environments.tooluse.state import canonical_hash
    from rlclimb.environments.tooluse.env import ToolUseEnvironment        # kind "tool"
"""
