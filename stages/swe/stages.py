"""The stages of the github-prs pipeline: import -> collect -> build -> grade -> verify ->
quality (LLM, opt-in) -> export. Each drop is ledgered with a reason; build, grade and verify
are row-cached, so a resumed run neither rebuilds nor regrades what it finished."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from rlclimb.environments.swe.lang import LANGUAGES, PYTHON
from rlclimb.pipelines.stage import (
    ConfigError,
    Drop,
    Keep,
    Record,
    Stage,
    StageConfig,
    StageContext,
)
from rlclimb.schemas.swe import RecordError, parse_pr

from . import repos


# ---- import + collect ----------------------------------------------------------------------
class ImportPRConfig(StageConfig):
    language: str = "python"
    # a local clone whose merged PRs are the input (set by --from-git-history)
    git_history: str | None = None
    history_limit: int = Field(20, ge=1)  # newest merged PRs mined from --from-git-history


class ImportPR(Stage):
    """An input line (SWE-bench instance or GitHub PR export) -> a normalized PR record."""

    name = "swe_import"
    version = "1"
    Config = ImportPRConfig

    def process(self, item: Record, ctx: StageContext) -> Any:
        lang = LANGUAGES.get(self.config.language, PYTHON)
        where = f"{item.get('file', '?')}:{item.get('line', '?')}"
        try:
            pr = parse_pr(item.get("data"), where, lang.is_test_path)
        except RecordError as e:
            return Drop(e.reason, str(e))
        return {**pr.model_dump(), "language": lang.name}


class CollectConfig(StageConfig):
    max_files: int = Field(15, ge=1)  # a PR must change fewer files than this
    require_linked_issue: bool = True  # only applies where the record says (GitHub export, "fixes #N")


class CollectPRs(Stage):
    """Merged, small, code AND test changes, linked to an issue when that is known."""

    name = "swe_collect"
    version = "1"
    kind = "filter"
    Config = CollectConfig

    def process(self, pr: Record, ctx: StageContext) -> Any:
        if not pr.get("merged", True):
            return Drop("not_merged", f"{pr['instance_id']}: the PR was not merged")
        if pr["files_changed"] >= self.config.max_files:
            return Drop("too_many_files", f"{pr['instance_id']}: {pr['files_changed']} files changed (limit < {self.config.max_files})")
        if not pr["test_patch"].strip():
            return Drop("no_test_changes", f"{pr['instance_id']}: no file changed is a test by the {pr.get('language')} path rules")
        if not pr["patch"].strip():
            return Drop("no_code_changes", f"{pr['instance_id']}: only test files changed")
        if self.config.require_linked_issue and pr.get("linked_issue") is False:
            return Drop("no_linked_issue", f"{pr['instance_id']}: the export lists no linked issue")
        return True


# ---- build ---------------------------------------------------------------------------------
class BuildConfig(StageConfig):
    repos: str | None = None  # DIR with one clone per repository, named owner__name (--repos)
    clone: bool = True  # git clone https://github.com/owner/name when no local clone is found
    pin_by_date: bool = True  # resolve dependencies as of the dependency commit's date (pip --uploaded-prior-to)
    network: str | None = None  # Docker network for builds (e.g. host); default: the bridge
    agent_attempts: int = Field(3, ge=0)  # LLM revisions of a failing Dockerfile (needs llm role)
    role: str = "builder"  # LLM role of the Dockerfile agent; without it no agent runs


class BuildImage(Stage):
    """Layered Docker image per instance (base -> repo env -> instance), sanitized repository,
    leak probe; the image tag, dependency set and resolved versions go into the record."""

    name = "swe_build"
    version = "1"
    cache = True
    concurrency = 1  # builds share two cores; the engine's cache keeps finished ones
    Config = BuildConfig

    def check(self, llm_config: Any) -> None:
        self.agent = False
        if llm_config is not None and self.config.agent_attempts > 0:
            try:
                llm_config.resolve(self.config.role)
                self.agent = True
            except ValueError:
                self.note = f"no llm role {self.config.role!r}: Dockerfiles are not revised by an agent"

    async def process(self, pr: Record, ctx: StageContext) -> Any:
        from .agent import reviser
        from .builder import BuildOptions, LeakError, build_instance
        from .images import BuildError, host_pip_settings

        run = Path(ctx.run_dir or ".")
        cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rlclimb" / "swe"
        try:
            clone = repos.find_repo(pr["repo"], pr.get("repo_path"), self.config.repos, run / "repos", self.config.clone)
        except repos.RepoError as e:
            return Drop("repo_not_found", str(e))
        opts = BuildOptions(
            work_dir=run / "builds",
            cache_dir=cache,
            settings=host_pip_settings(),
            pin_by_date=self.config.pin_by_date,
            network=self.config.network,
            agent_attempts=self.config.agent_attempts if getattr(self, "agent", False) else 0,
        )
        revise = reviser(ctx.llm, self.config.role, pr, tag=self.name) if opts.agent_attempts else None
        lang = LANGUAGES.get(pr.get("language") or "python", PYTHON)
        try:
            built = await build_instance(pr, clone, lang, opts, revise)
        except repos.RepoError as e:
            return Drop("base_commit_missing", str(e))
        except LeakError as e:
            return Drop("leak_detected", str(e))
        except BuildError as e:
            return Drop("build_failed", f"{pr['instance_id']}: {e} (log: {run / 'builds' / 'logs'})")
        return Keep(
            {
                **pr,
                "image": built.image,
                "env_image": built.env_image,
                "version": built.version,
                "environment_setup_commit": built.version,
                "dependency_pinning": built.pinning,
                "resolved_versions": built.resolved_versions,
                "build_log": str(Path(built.log).relative_to(run)) if Path(built.log).is_relative_to(run) else built.log,
                "agent_revisions": built.agent_revisions,
            },
            reason=f"env {built.steps.get('env')}, instance {built.steps.get('instance')}",
        )


# ---- grading signal and verification -------------------------------------------------------
class GradeConfig(StageConfig):
    pass


class GradeSignal(Stage):
    """FAIL_TO_PASS / PASS_TO_PASS from the base commit's tests with the test diff (a) alone,
    (b) with the code diff; results from JUnit XML."""

    name = "swe_grade"
    version = "1"
    cache = True
    Config = GradeConfig

    def process(self, rec: Record, ctx: StageContext) -> Any:
        from rlclimb.environments.swe.grading import GradingError, reference_signal

        try:
            f2p, p2p = reference_signal(rec["image"], rec)
        except GradingError as e:
            return Drop("grading_failed", f"{rec['instance_id']}: {e}"[:800])
        if not f2p:
            return Drop("no_fail_to_pass", f"{rec['instance_id']}: no test fails before the fix and passes after ({len(p2p)} pass in both)")
        return {**rec, "FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p}


class VerifyConfig(StageConfig):
    trials: int = Field(3, ge=1)  # empty and gold patch, each this many times, fresh containers


class VerifyInstance(Stage):
    """Empty patch fails, gold passes, over N trials in the trainer's sandbox; flaky tests go."""

    name = "swe_verify"
    version = "1"
    cache = True
    Config = VerifyConfig

    def process(self, rec: Record, ctx: StageContext) -> Any:
        from rlclimb.environments.swe.grading import verify

        v = verify(rec["image"], rec, trials=self.config.trials)
        flaky = sorted(set(v.flaky))
        if not v.ok:
            reason = "flaky" if flaky and not v.fail_to_pass else "verify_failed"
            return Drop(reason, f"{rec['instance_id']}: {v.reason}"[:800])
        out = {**rec, "FAIL_TO_PASS": v.fail_to_pass, "PASS_TO_PASS": v.pass_to_pass, "flaky_tests": flaky}
        return Keep(out, reason=v.reason)


# ---- problem statement quality (LLM, opt-in) -----------------------------------------------
class QualityScores(BaseModel):
    clarity: int = Field(ge=1, le=5)
    test_alignment: int = Field(ge=1, le=5)
    leakage: int = Field(ge=1, le=5, description="5: the statement does not give the fix away")
    feasibility: int = Field(ge=1, le=5)
    comment: str = ""


class Rewrite(BaseModel):
    problem_statement: str


class QualityConfig(StageConfig):
    role: str = "judge"  # LLM role that scores and rewrites
    rewrite_below: int = Field(3, ge=1, le=5)  # rewrite when any score is under this
    drop_below: int | None = None  # drop when any score (after a rewrite: none) is under this


SCORE_PROMPT = """You review a software-engineering task made from a merged pull request.
An agent will get only the problem statement and the repository at the base commit; hidden
tests (the test diff below) decide success. Score 1-5 each:
- clarity: can a developer tell what to change?
- test_alignment: do the hidden tests check what the statement asks (no hidden requirements)?
- leakage: 5 = the statement does not contain the fix (code of the solution); 1 = it does
- feasibility: solvable from the statement and the repository alone?

Problem statement:
{statement}

Hidden test diff:
{tests}
"""

REWRITE_PROMPT = """Rewrite this problem statement for a software-engineering task so that a
developer knows what behaviour is wrong and what is expected, and so that the hidden tests
check only what it asks. Describe behaviour, never the fix: no code of the solution, no file
or line to change unless the original names it. Keep it short.

Original statement:
{statement}

Hidden test diff (do not quote test code):
{tests}
"""


class ProblemQuality(Stage):
    """Score problem statements with an LLM; rewrite weak ones (the original is kept)."""

    name = "swe_quality"
    version = "1"
    cache = True
    enabled_by_default = False
    Config = QualityConfig

    def check(self, llm_config: Any) -> None:
        if llm_config is None:
            raise ConfigError(f"stage {self.name}: needs an `llm:` section with a role {self.config.role!r}")
        try:
            llm_config.resolve(self.config.role)
        except ValueError as e:
            raise ConfigError(f"stage {self.name}: {e}") from None

    async def process(self, rec: Record, ctx: StageContext) -> Any:
        tests = rec["test_patch"][:6000]
        msg = [{"role": "user", "content": SCORE_PROMPT.format(statement=rec["problem_statement"][:8000], tests=tests)}]
        scores, c = await ctx.llm.structured(self.config.role, msg, QualityScores, tag=self.name, seed=ctx.sample_seed)
        out = {**rec, "quality": scores.model_dump()}
        cost = c.cost
        low = min(scores.clarity, scores.test_alignment, scores.leakage, scores.feasibility)
        if low < self.config.rewrite_below:
            msg = [{"role": "user", "content": REWRITE_PROMPT.format(statement=rec["problem_statement"][:8000], tests=tests)}]
            new, c2 = await ctx.llm.structured(self.config.role, msg, Rewrite, tag=self.name, seed=ctx.sample_seed)
            cost += c2.cost
            if _leaks_fix(new.problem_statement, rec["patch"]):
                out["quality"]["rewrite_rejected"] = "the rewrite quotes added lines of the fix"
            else:
                out["problem_statement_original"] = rec["problem_statement"]
                out["problem_statement"] = new.problem_statement
                low = None  # a rewritten statement is not held to the old scores
        if self.config.drop_below is not None and low is not None and low < self.config.drop_below:
            return Drop("weak_problem_statement", f"{rec['instance_id']}: scores {scores.model_dump()}", model=c.model, cost=cost)
        return Keep(out, model=c.model, cost=cost)


def _leaks_fix(text: str, patch: str) -> bool:
    """True when a non-trivial added line of the code diff appears in the text verbatim."""
    added = [ln[1:].strip() for ln in patch.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return any(len(a) >= 12 and a in text for a in added)


# ---- export --------------------------------------------------------------------------------
class ExportConfig(StageConfig):
    path: str = "swebench.jsonl"  # relative to the run directory


SWEBENCH_KEYS = (
    "instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "hints_text",
    "FAIL_TO_PASS", "PASS_TO_PASS", "image", "eval_script", "version", "created_at",
    "environment_setup_commit", "test_files", "problem_statement_original", "resolved_versions",
)


class ExportSwebench(Stage):
    """swebench.jsonl in the run directory (one line per kept instance); the records go on to
    data/ as our SWE task records."""

    name = "swe_export"
    version = "1"
    kind = "global"
    Config = ExportConfig
    config_outputs = ("path",)

    def run(self, records, ctx: StageContext):
        from rlclimb.environments.swe.grading import eval_script, files_to_run
        from rlclimb.schemas.swe import SweInstance

        dest = Path(ctx.run_dir or ".") / self.config.path
        tmp = dest.with_name(dest.name + ".partial")
        tests = {"instances": 0, "fail_to_pass": 0, "pass_to_pass": 0, "flaky_dropped": 0, "flaky": {}}
        seen: set[str] = set()
        with open(tmp, "w") as f:
            for rec in records:
                if rec["instance_id"] in seen:  # the same PR from two inputs: one instance, one image
                    yield rec, Drop("duplicate_instance", f"{rec['instance_id']}: already exported")
                    continue
                seen.add(rec["instance_id"])
                rec = {**rec, "test_files": rec.get("test_files") or files_to_run(rec)}
                rec["eval_script"] = eval_script(rec)
                line = SweInstance.model_validate(rec).model_dump()
                f.write(json.dumps({k: line.get(k) for k in SWEBENCH_KEYS if line.get(k) is not None}) + "\n")
                tests["instances"] += 1
                tests["fail_to_pass"] += len(rec["FAIL_TO_PASS"])
                tests["pass_to_pass"] += len(rec["PASS_TO_PASS"])
                if rec.get("flaky_tests"):
                    tests["flaky_dropped"] += len(rec["flaky_tests"])
                    tests["flaky"][rec["instance_id"]] = list(rec["flaky_tests"])
                yield rec
        os.replace(tmp, dest)
        # the test-level part of the funnel (the engine's stats count instances)
        (dest.parent / "swe_tests.json").write_text(json.dumps(tests, indent=1))


STAGES = [ImportPR, CollectPRs, BuildImage, GradeSignal, VerifyInstance, ProblemQuality, ExportSwebench]
