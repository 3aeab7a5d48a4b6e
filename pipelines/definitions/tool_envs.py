"""tool-envs: plain-English service descriptions (a YAML list) -> tool-use environments.

    import -> bootstrap -> tasks -> verify -> write

bootstrap designs the entity model and tools, implements them (tools.py + seed state), runs
critique-and-revise rounds and smoke-tests every tool in the sandbox with a repair loop; tasks
samples tool chains from the graph of which outputs feed which inputs and has the LLM write the
user request, gold actions and needed entities (plus no-tool requests); verify replays every
task's gold actions in a fresh state and drops failures, no-op writes and near-duplicates;
write saves RUN/envs/<name>/ per description. The LLM is the `generator` role of the run's
`llm:` section, else the embedded SmolLM2 in-process.
"""

from __future__ import annotations

from typing import Any

from rlclimb.stages.tooluse.bootstrap import BootstrapEnv
from rlclimb.stages.tooluse.importer import DescriptionsReader, ImportDescription
from rlclimb.stages.tooluse.tasks import MakeTasks
from rlclimb.stages.tooluse.verify import VerifyTasks
from rlclimb.stages.tooluse.write import WriteEnvs

from ..engine import Pipeline
from . import configure

STAGES = [ImportDescription, BootstrapEnv, MakeTasks, VerifyTasks, WriteEnvs]


def build(inputs: list[str], sections: dict[str, Any], shard_size: int = 10_000) -> Pipeline:
    return Pipeline(
        name="tool-envs",
        reader=DescriptionsReader(inputs),
        stages=configure(STAGES, sections),
        shard_size=shard_size,
    )
