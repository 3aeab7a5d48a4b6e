"""The stages of `swe-synth`: SWE tasks made by injecting bugs into environments that built.

    pick -> candidates -> validate -> bake -> statement -> export

Input: a `github-prs` run's swebench.jsonl (its instances have images that build and pass their
tests). `synth_pick` takes the newest instances per repository (their images are the bases) and
hands them the repository's past fixes; `synth_candidates` lists bug candidates (mutations of
`mutate.py` and reverted past fixes); `synth_validate` keeps those the suite catches
deterministically; `synth_bake` builds the task image and verifies the task in it (gold patch =
the inverse of the bug resolves, the empty patch does not); `synth_statement` writes the issue
text; `synth_export` writes swebench.jsonl with `"synthetic": true` and the recipe.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from rlclimb.environments.swe.grading import GradingError
from rlclimb.pipelines.stage import (
    ConfigError,
    Drop,
    Keep,
    Record,
    Stage,
    StageConfig,
    StageContext,
)

from .mutate import KINDS, apply, functions, replace_function, sites
from .statement import failure_lines, leaks, llm_prompt, template_statement
from .synth import (
    bake,
    baseline,
    catch,
    fix_of,
    history_leak,
    import_error,
    read_sources,
    revert_candidate,
    suite_instance,
    telltale,
)

SWEBENCH_KEYS = ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement",
                 "FAIL_TO_PASS", "PASS_TO_PASS", "image", "eval_script", "version", "created_at")


def _instance(record: Record) -> dict:
    """A swebench.jsonl line as read (`data` of the JSONL reader's item) or a record of ours."""
    return record.get("data", record)


class PickConfig(StageConfig):
    instances_per_repo: int = 1  # newest instances of each repository used as bases


class SynthPick(Stage):
    name = "synth_pick"
    kind = "global"
    Config = PickConfig

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record | tuple[Record, Drop]]:
        by_repo: dict[str, list[dict]] = defaultdict(list)
        for r in records:
            inst = _instance(r)
            missing = [k for k in ("instance_id", "repo", "base_commit", "image") if not inst.get(k)]
            if missing:
                yield r, Drop("bad_instance", f"line {r.get('line')}: no {', '.join(missing)}: "
                                              "the input must be a github-prs run's swebench.jsonl")
                continue
            if inst.get("synthetic"):
                yield r, Drop("synthetic_input", f"{inst['instance_id']} is itself synthetic")
                continue
            by_repo[inst["repo"]].append(inst)
        for repo in sorted(by_repo):
            insts = sorted(by_repo[repo], key=lambda i: (str(i.get("created_at") or ""), i["instance_id"]), reverse=True)
            for i, inst in enumerate(insts):
                if i >= self.config.instances_per_repo:
                    yield {"id": inst["instance_id"], **inst}, Drop("not_a_base", "an older instance of the same repository")
                    continue
                past = [{"instance_id": o["instance_id"], "patch": o.get("patch") or ""}
                        for o in insts[i + 1:] if o.get("patch")]
                yield {"id": inst["instance_id"], **inst, "past_fixes": past}


class CandidatesConfig(StageConfig):
    kinds: list[str] = list(KINDS)  # mutation kinds tried
    paths: list[str] = []  # only files matching these globs (fnmatch); [] = every non-test module
    per_kind: int = 3  # candidates kept per kind and base instance (seeded choice)
    reverts: bool = True  # also re-introduce the bugs past fixes repaired
    max_reverts: int = 5
    llm_role: str = ""  # with a role: an LLM also rewrites functions with a plausible bug
    llm_functions: int = 3  # functions rewritten per base instance (seeded choice)


class SynthCandidates(Stage):
    name = "synth_candidates"
    kind = "expand"
    cache = True
    seeded = True
    Config = CandidatesConfig

    def check(self, llm_config: Any) -> None:
        unknown = set(self.config.kinds) - set(KINDS)
        if unknown:
            raise ConfigError(f"synth_candidates.kinds: unknown {sorted(unknown)}; known: {', '.join(KINDS)}")
        if self.config.llm_role:
            from rlclimb.stages.documents.parse_vlm import require_llm

            require_llm(llm_config, self.config.llm_role, "synth_candidates.llm_role")

    async def process(self, record: Record, ctx: StageContext) -> list[Record] | Drop:
        # Docker work goes to threads: the stage is async for its LLM calls.
        sources = await asyncio.to_thread(read_sources, record["image"], record)
        if sources.head != record["base_commit"]:
            return Drop("image_mismatch", f"{record['image']} holds {sources.head[:12]}, the instance says "
                                          f"{record['base_commit'][:12]}: rebuild the github-prs run's images")
        if not sources.tests:
            return Drop("no_tests", f"{record['image']}: no test files in /testbed")
        # Sites are listed cheaply for every module; only the chosen ones are made into
        # mutations (each is a traversal of its module: all of them is quadratic in module size).
        chosen: dict[str, list] = defaultdict(list)
        for path in sorted(sources.code):
            if self.config.paths and not any(fnmatch(path, g) for g in self.config.paths):
                continue
            try:
                found = sites(sources.code[path], tuple(self.config.kinds))
            except Exception:  # a file libcst cannot parse (Python 2, templates): not a candidate source
                continue
            for site in found:
                chosen[site.kind].append((path, site))
        out = []
        for kind in self.config.kinds:
            ranked = sorted(chosen[kind], key=lambda x: _rank(ctx.seed, x[0], x[1].line, x[1].before, x[1].after))
            made = 0
            for path, site in ranked:
                if made >= self.config.per_kind:
                    break
                try:
                    m = apply(sources.code[path], path, site)
                except Exception:  # a rewrite libcst refuses at this site: try the next one
                    continue
                if m is not None:
                    out.append(self._candidate(record, sources.tests, kind, m.bug_diff, m.fix_diff, m.recipe()))
                    made += 1
        if self.config.reverts:
            for fix in record.get("past_fixes", [])[: self.config.max_reverts]:
                bug = await asyncio.to_thread(revert_candidate, record["image"], fix["patch"])
                if bug:
                    recipe = {"kind": "revert", "reverts": fix["instance_id"]}
                    fixed = await asyncio.to_thread(fix_of, record["image"], bug)
                    out.append(self._candidate(record, sources.tests, "revert", bug, fixed, recipe))
        if self.config.llm_role and ctx.llm is not None:
            for m in await self._rewrites(sources.code, ctx):
                out.append(self._candidate(record, sources.tests, m.kind, m.bug_diff, m.fix_diff,
                                           {**m.recipe(), "model": self.config.llm_role}))
        return out or Drop("no_candidates", "no mutable code found")

    async def _rewrites(self, code: dict[str, str], ctx: StageContext) -> list:
        """Functions of 2+ lines, a seeded choice, each rewritten by the LLM with a plausible bug;
        replies that are not one function of the same name, or change nothing, are skipped."""
        pool = []
        for path in sorted(code):
            if self.config.paths and not any(fnmatch(path, g) for g in self.config.paths):
                continue
            try:
                pool += [(path, name, body) for name, body in functions(code[path]) if body.count("\n") >= 1]
            except Exception:
                continue
        pool.sort(key=lambda x: _rank(ctx.seed, "llm", x[0], x[1]))
        found = []
        for path, name, body in pool[: self.config.llm_functions]:
            reply = await ctx.llm.complete(self.config.llm_role, [{"role": "user", "content": REWRITE_PROMPT.format(
                path=path, code=body)}], tag=self.name, max_tokens=1200)
            block = _PY_BLOCK.search(reply.text)
            m = replace_function(code[path], path, name, block.group(1) if block else reply.text)
            if m is not None:
                found.append(m)
        return found

    @staticmethod
    def _candidate(base: Record, tests: list[str], kind: str, bug: str, fix: str, recipe: dict) -> Record:
        digest = hashlib.sha256(bug.encode()).hexdigest()[:10]
        return {
            "id": f"{base['instance_id']}.synth-{kind}-{digest}",
            "instance_id": f"{base['instance_id']}.synth-{kind}-{digest}",
            "repo": base["repo"], "source_instance": base["instance_id"], "image": base["image"],
            "base_commit": base["base_commit"], "version": base.get("version") or "",
            "created_at": base.get("created_at") or "", "language": base.get("language") or "python",
            "test_files": tests, "bug_patch": bug, "patch": fix, "kind": kind, "recipe": json.dumps(recipe),
        }


REWRITE_PROMPT = """Here is a function from {path} in a Python library:

```python
{code}
```

Rewrite it so that it contains one subtle, plausible bug of the kind a developer makes (a wrong
boundary, an inverted or missing condition, a forgotten case, a wrong variable). Keep its name,
signature and behaviour otherwise, keep it importable, and add no comment or name that points at
the change. Answer with the whole function in one ```python block and nothing else."""
_PY_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


def _rank(seed: int, *parts: object) -> str:
    return hashlib.sha256("|".join(map(str, (seed, *parts))).encode()).hexdigest()


class ValidateConfig(StageConfig):
    trials: int = 3  # the bug must make the same tests fail in every trial
    max_diff_lines: int = 12  # a bigger injected change is not a plausible slip


class SynthValidate(Stage):
    name = "synth_validate"
    kind = "map"
    cache = True
    Config = ValidateConfig

    def setup(self, ctx: StageContext) -> None:
        self._baselines: dict[str, Any] = {}

    def _baseline(self, record: Record) -> tuple[set[str], list[str]]:
        key = record["image"]
        if key not in self._baselines:
            self._baselines[key] = baseline(record["image"], suite_instance(record, record["test_files"]), self.config.trials)
        return self._baselines[key]

    def process(self, record: Record, ctx: StageContext) -> Record | Drop:
        if not record.get("patch"):
            return Drop("no_fix", "the inverse of the bug could not be made")
        if why := telltale(record["bug_patch"], self.config.max_diff_lines):
            return Drop("too_visible", why)
        recipe = json.loads(record["recipe"])
        if recipe.get("path") and (why := import_error(record["image"], record["bug_patch"], recipe["path"])):
            return Drop("breaks_import", why)
        try:
            passing, tests = self._baseline(record)
        except GradingError as e:
            return Drop("no_clean_suite", str(e))
        record = {**record, "test_files": tests}
        caught = catch(record["image"], suite_instance(record, tests), record["bug_patch"], passing, self.config.trials)
        if caught.reason:
            reason, _, detail = caught.reason.partition(": ")
            return Drop(reason, detail)
        return {**record, "FAIL_TO_PASS": caught.fail_to_pass, "PASS_TO_PASS": caught.pass_to_pass,
                "failure": failure_lines(caught.log)}


class BakeConfig(StageConfig):
    verify_trials: int = 1  # gold / empty patch runs in the baked image (validate already de-flaked)


class SynthBake(Stage):
    name = "synth_bake"
    kind = "map"
    cache = True
    Config = BakeConfig

    def process(self, record: Record, ctx: StageContext) -> Record | Drop:
        from rlclimb.environments.swe.grading import eval_script, verify

        try:
            tag, head = bake(record, record["bug_patch"])
        except GradingError as e:
            return Drop("build_failed", str(e))
        if leak := history_leak(tag, record["base_commit"]):
            return Drop("history_leak", f"{tag}: {leak}")
        task = {**record, "image": tag, "base_commit": head, "test_patch": "",
                "clean_commit": record["base_commit"]}
        v = verify(tag, task, trials=self.config.verify_trials)
        if not v.ok:
            return Drop("not_verified", v.reason)
        task.update(FAIL_TO_PASS=v.fail_to_pass, PASS_TO_PASS=v.pass_to_pass, eval_script=eval_script(task))
        return task


class StatementConfig(StageConfig):
    llm_role: str = ""  # LLM role that writes the issue text; "" = the template quoting the failure


class SynthStatement(Stage):
    name = "synth_statement"
    kind = "map"
    cache = True
    Config = StatementConfig

    def check(self, llm_config: Any) -> None:
        if self.config.llm_role:
            from rlclimb.stages.documents.parse_vlm import require_llm

            require_llm(llm_config, self.config.llm_role, "synth_statement.llm_role")

    async def process(self, record: Record, ctx: StageContext) -> Record | Keep:
        recipe = json.loads(record["recipe"])
        snippets = [s for s in (recipe.get("before"), recipe.get("after")) if s]
        failing = record["FAIL_TO_PASS"]
        lines = list(record.get("failure") or [])
        text = template_statement(failing, lines, snippets)
        how, model = "template", None
        if self.config.llm_role and ctx.llm is not None:
            reply = await ctx.llm.complete(self.config.llm_role, [
                {"role": "user", "content": llm_prompt(failing, lines)}],
                tag=self.name, max_tokens=600)
            why = leaks(reply.text, snippets, [recipe.get("path", "")])
            if reply.text.strip() and not why:
                text, how, model = reply.text.strip(), "llm", reply.model
            else:
                how = f"template (the LLM's text {why or 'was empty'})"
        out = {**record, "problem_statement": text, "statement_source": how}
        return Keep(out, reason=how, model=model) if model else out


class ExportConfig(StageConfig):
    pass


class SynthExport(Stage):
    """Writes RUN/swebench.jsonl (the SWE-bench fields plus `synthetic`, `recipe`, `source_instance`)."""

    name = "synth_export"
    kind = "global"
    Config = ExportConfig

    def run(self, records: Iterable[Record], ctx: StageContext) -> Iterator[Record]:
        rows = []
        for r in records:
            rows.append(r)
            yield r
        if ctx.run_dir is None:
            return
        lines = [json.dumps({**{k: r.get(k) for k in SWEBENCH_KEYS}, "synthetic": True,
                             "recipe": json.loads(r["recipe"]), "source_instance": r["source_instance"],
                             "language": r.get("language", "python")}) for r in rows]
        out = Path(ctx.run_dir) / "swebench.jsonl"
        tmp = out.with_name(".swebench.jsonl.tmp")
        tmp.write_text("".join(line + "\n" for line in lines))
        tmp.replace(out)
