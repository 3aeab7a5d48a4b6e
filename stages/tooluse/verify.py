"""Verify: every task's gold actions replayed in a fresh copy of its environment's final state.

Dropped, each with a ledger reason: drafts the tasks stage found unusable (their problem);
`gold_failed` (a gold call was rejected, raised, returned "Error: ..." or had to be stopped);
`noop_write` (the chain has write tools but the state hash did not change); `outputs_unsupported`
(an expected output appears in no tool output); `duplicate_actions` (the same canonical action
chain as an earlier task); `near_duplicate` (the same tool chain and an instruction whose
embedding is within `similarity` of an earlier one's; without the embed extra, word-set Jaccard,
said in the funnel note). Kept tasks get the replay's `final_hash`.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from rlclimb.environments.tooluse.format import ToolTask
from rlclimb.environments.tooluse.runtime import ToolRuntime, replay
from rlclimb.environments.tooluse.state import canonical, dumps
from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext

from ..dedup.common import write_report
from ..embedding import Backend, load_embedder, missing_extra
from .bundle import loads, materialize


class VerifyConfig(StageConfig):
    similarity: float = Field(0.92, gt=0, le=1)  # instruction cosine at or above which a same-chain task is a near-duplicate
    jaccard: float = Field(0.8, gt=0, le=1)  # the word-set threshold used instead without the embed extra
    embedding_backend: Backend = "minilm"  # stages/embedding.py backends
    check_outputs: bool = True  # expected outputs must appear in the gold calls' outputs
    backend: str | None = None  # sandbox for the replays (default: the runtime's choice)
    call_timeout_s: float = Field(10.0, gt=0)  # a gold call running longer is stopped (gold_failed)


class VerifyTasks(Stage):
    name = "verify"
    version = "1"
    kind = "global"
    Config = VerifyConfig

    def check(self, llm_config: Any) -> None:
        if (msg := missing_extra(self.config.embedding_backend)) is not None:
            self.note = f"near-duplicates by word-set Jaccard >= {self.config.jaccard}: {msg}"

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        groups: dict[str, list[Record]] = {}
        for r in records:
            groups.setdefault(r["env_name"], []).append(r)
        report: dict[str, Any] = {}
        for name, recs in groups.items():
            counts: dict[str, int] = {"in": len(recs), "kept": 0}
            for item in self._verify_env(recs):
                if isinstance(item, tuple):
                    counts[item[1].reason] = counts.get(item[1].reason, 0) + 1
                else:
                    counts["kept"] += 1
                yield item
            report[name] = counts
        write_report(ctx, self.name, {"environments": report})

    def _verify_env(self, recs: list[Record]) -> Iterator[Record | tuple[Record, Drop]]:
        bundle = loads(recs[0]["env"])
        kinds = {t["name"]: t["kind"] for t in bundle["tools"]}
        live: list[tuple[Record, dict]] = []
        for r in recs:
            if r.get("problem"):
                yield r, Drop(r["problem"], r.get("problem_detail", ""))
            else:
                live.append((r, json.loads(r["task"])))
        if not live:
            return
        with tempfile.TemporaryDirectory(prefix="rlclimb-verify-") as tmp:
            spec = materialize(bundle, Path(tmp) / "env")
            rt = ToolRuntime(spec, backend=self.config.backend, call_timeout_s=self.config.call_timeout_s)
            try:
                rt.start()
                initial = rt.state_hash()
            except Exception as e:
                rt.close()
                for r, _ in live:
                    yield r, Drop("runtime_failed", f"environment {bundle['name']}: {str(e)[:600]}")
                return
            replayed = []
            try:
                for r, task in live:
                    drop = self._replay(spec, rt, task, kinds, initial)
                    if drop is not None:
                        yield r, drop
                    else:
                        replayed.append((r, task))
            finally:
                rt.close()
        yield from self._dedup(replayed)

    def _replay(self, spec, rt: ToolRuntime, task: dict, kinds: dict[str, str], initial: str) -> Drop | None:
        if not task["actions"]:
            task["final_hash"] = initial
            return None
        res = replay(spec, ToolTask.model_validate(task), runtime=rt)
        if res.final_hash is None:
            return Drop("gold_failed", f"task {task['id']}: {res.error[:600]}")
        for i, rec in enumerate(res.calls):
            if rec.status != "ok" or rec.output.startswith("Error:"):
                return Drop("gold_failed", f"task {task['id']}: action {i} {rec.name}({json.dumps(rec.arguments)[:200]}): "
                                           f"{rec.status}: {rec.output[:400]}")
        if any(kinds.get(a["name"]) == "write" for a in task["actions"]) and res.final_hash == initial:
            return Drop("noop_write", f"task {task['id']}: its write calls left the state unchanged")
        if self.config.check_outputs:
            seen = "\n".join(res.outputs).lower()
            missing = [o for o in task["outputs"] if str(o).lower() not in seen]
            if missing:
                return Drop("outputs_unsupported", f"task {task['id']}: expected output {missing[0]!r} is in no tool output")
        task["final_hash"] = res.final_hash
        task["meta"]["tool_outputs"] = len(res.outputs)
        return None

    def _dedup(self, items: list[tuple[Record, dict]]) -> Iterator[Record | tuple[Record, Drop]]:
        exact: dict[str, str] = {}
        by_chain: dict[str, list[tuple[str, Any]]] = {}  # tool-name chain -> [(task id, vector or word set)]
        vectors = self._vectors([t["instruction"] for _, t in items])
        for (r, task), vec in zip(items, vectors, strict=True):
            signature = dumps(canonical([[a["name"], a.get("arguments", {})] for a in task["actions"]]))
            if task["actions"] and signature in exact:
                yield r, Drop("duplicate_actions", f"task {task['id']}: the same gold actions as {exact[signature]}")
                continue
            chain = dumps([a["name"] for a in task["actions"]])
            near = next(((tid, s) for tid, other in by_chain.get(chain, []) if (s := self._similar(vec, other)) is not None), None)
            if near is not None:
                yield r, Drop("near_duplicate", f"task {task['id']}: same tool chain as {near[0]}, instruction similarity {near[1]:.3f}")
                continue
            exact.setdefault(signature, task["id"])
            by_chain.setdefault(chain, []).append((task["id"], vec))
            yield {"env_name": r["env_name"], "env": r["env"], "task": json.dumps(task, ensure_ascii=False)}

    def _vectors(self, texts: list[str]) -> list[Any]:
        if self.note is None and texts:
            return list(load_embedder(self.config.embedding_backend).encode(texts))
        return [set(re.findall(r"\w+", t.lower())) for t in texts]

    def _similar(self, a: Any, b: Any) -> float | None:
        """The similarity when at or above the threshold, else None."""
        if isinstance(a, set):
            s = len(a & b) / max(len(a | b), 1)
            return s if s >= self.config.jaccard else None
        s = float(np.dot(a, b))
        return s if s >= self.config.similarity else None
