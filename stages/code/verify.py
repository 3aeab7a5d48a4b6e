"""Verify code problems in a sandbox (competitive-coding problems).

Every reference solution runs on every test. With two or more references that compile, a test
is dropped when too few of them reproduce its expected output (`agreement`, default 0.7: the
seed's "7 of 10 agree"): its expected output is disputed. The problem is kept only if one
reference passes all remaining tests and at least `min_tests` remain. Limits and the
verification results go into the record (`meta.verification`).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from rlclimb.environments.code_run import RunReport, run_tests
from rlclimb.environments.sandbox import Sandbox, get_sandbox
from rlclimb.pipelines.stage import Drop, Keep, Record, Stage, StageConfig, StageContext
from rlclimb.schemas.records import CodeProblem


class VerifyCodeConfig(StageConfig):
    backend: str = "auto"  # docker | bwrap | process | auto
    image: str | None = None  # docker image, e.g. python:3.11-slim from a registry; None: the local base
    min_tests: int = 5
    agreement: float = 0.7  # share of compiling references that must reproduce a test's output
    time_limit_s: float | None = None  # per test; None: the problem's own limit
    max_time_limit_s: float = 12.0
    threads: int = 2  # references checked at once (each in its own sandbox)


class VerifyCode(Stage):
    name = "verify"
    version = "1"
    kind = "map"
    Config = VerifyCodeConfig
    cache = True  # sandbox runs are the expensive part: a resumed run does not repeat them
    output_model = CodeProblem

    def setup(self, ctx: StageContext) -> None:
        self.sandbox: Sandbox = get_sandbox(self.config.backend, image=self.config.image)

    def process(self, record: Record, ctx: StageContext) -> Record | Keep | Drop:
        cfg = self.config
        problem = CodeProblem.model_validate(record)
        if len(problem.tests) < cfg.min_tests:
            return Drop(
                "too_few_tests", f"{len(problem.tests)} tests; at least {cfg.min_tests} required"
            )
        if not hasattr(self, "sandbox"):
            self.setup(ctx)
        time_limit = min(cfg.time_limit_s or problem.time_limit_s, cfg.max_time_limit_s)

        def check(solution) -> RunReport:
            return run_tests(
                self.sandbox,
                solution.code,
                solution.language,
                problem.tests,
                time_limit_s=time_limit,
                memory_mb=problem.memory_limit_mb,
            )

        with ThreadPoolExecutor(max(1, cfg.threads)) as pool:
            reports = list(pool.map(check, problem.solutions))
        if any(o.status == "ERROR" for r in reports for o in r.outcomes):
            err = next(o for r in reports for o in r.outcomes if o.status == "ERROR")
            return Drop("error", f"sandbox failure ({self.sandbox.describe()}): {err.detail}")

        compiled = [r for r in reports if r.compiled]
        kept, disputed = [], []
        for i in range(len(problem.tests)):
            share = sum(r.outcomes[i].passed for r in compiled) / max(len(compiled), 1)
            if len(compiled) >= 2 and share < cfg.agreement:
                disputed.append({"test": i, "agreement": round(share, 3)})
            else:
                kept.append(i)
        passing = [
            j
            for j, r in enumerate(reports)
            if r.compiled and all(r.outcomes[i].passed for i in kept)
        ]
        verification = {
            "backend": self.sandbox.name,
            "time_limit_s": time_limit,
            "memory_limit_mb": problem.memory_limit_mb,
            "references": [r.to_dict() for r in reports],
            "passing_references": passing,
            "disputed_tests": disputed,
            "tests_kept": len(kept),
        }
        if not passing:
            why = "; ".join(
                f"reference {j} ({r.language}): {r.summary()}" for j, r in enumerate(reports)
            )
            return Drop("reference_fails", f"no reference solution passes all tests: {why}"[:1000])
        if len(kept) < cfg.min_tests:
            return Drop(
                "too_few_tests",
                f"{len(kept)} tests left after dropping {len(disputed)} disputed; at least {cfg.min_tests} required",
            )
        meta = json.loads(problem.meta or "{}")
        meta["verification"] = verification
        out = problem.model_copy(
            update={
                "tests": [problem.tests[i] for i in kept],
                "solutions": [problem.solutions[j] for j in passing],
                "meta": json.dumps(meta, ensure_ascii=False, sort_keys=True),
            }
        )
        note = f"{len(passing)}/{len(reports)} references pass {len(kept)} tests"
        if disputed:
            note += f"; {len(disputed)} disputed test(s) dropped"
        return Keep(out.model_dump(), reason=note)
