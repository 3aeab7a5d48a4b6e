"""A QA pipeline with a cached LLM stage, run as a subprocess by tests/test_resume_kill.py.

    python tests/helpers/llm_pipeline.py --input F --out DIR --base-url URL [--concurrency 4] [--shard-size 10]

Stages: ImportQA -> Judge (async, row-cached; asks the `judge` role about the question and appends
the reply to `tags`) -> ExactDedup. Prints "<records> records" on success.
"""

from __future__ import annotations

import argparse

from rlclimb.pipelines.engine import Pipeline, RunOptions, run_pipeline
from rlclimb.pipelines.llm import LLMConfig
from rlclimb.pipelines.readers import JsonlReader
from rlclimb.pipelines.stage import Record, Stage, StageContext
from rlclimb.stages.dedup.exact import ExactDedup
from rlclimb.stages.qa.importer import ImportQA


class Judge(Stage):
    name = "judge"
    version = "1"
    kind = "map"
    cache = True
    concurrency = 8

    async def process(self, record: Record, ctx: StageContext) -> Record:
        reply = await ctx.llm.complete("judge", [{"role": "user", "content": record["question"]}], tag=self.name)
        record["tags"] = [*record["tags"], reply.text]
        return record


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--shard-size", type=int, default=10)
    args = ap.parse_args()
    llm = LLMConfig.from_dict({
        "profiles": {"local": {"base_url": args.base_url, "model": "judge-model", "api_key": "k",
                               "concurrency": args.concurrency, "timeout_s": 30, "backoff_s": 0.01}},
        "roles": {"judge": "local"},
    })
    pipeline = Pipeline("llm-qa", JsonlReader([args.input]), [ImportQA(), Judge(), ExactDedup()],
                        shard_size=args.shard_size)
    result = run_pipeline(pipeline, args.out, RunOptions(progress=False, llm=llm))
    print(f"{result.records} records", flush=True)


if __name__ == "__main__":
    main()
