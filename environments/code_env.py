"""Code environment: the response must contain a program in a fenced code block; the task reward
is 1 only if it passes every sampled test in the sandbox (a sparse reward, the
15 hardest tests by input length when there are more, a per-test timeout).

Options (`get_environment("code", ...)`): `backend` (sandbox: auto | docker | bwrap | process),
`max_tests` (15), `test_timeout_s` (None: the problem's limit, capped at 12 s), `language`
(expected language when the block has no tag; default: the problem's first reference's, else
python).
"""

from __future__ import annotations

import re
from typing import Any

from rlclimb.schemas.records import CodeProblem

from .base import Environment, Grade
from .code_run import get_language, hardest_tests, run_tests
from .sandbox import Sandbox, get_sandbox

SYSTEM = "You are an expert competitive programmer. Think about the algorithm, then write the code."
LANGUAGE_NAMES = {"python": "Python 3", "cpp": "C++17"}

# ```lang\n code ``` ; the last complete block wins (models often sketch first, answer last).
_FENCE = re.compile(r"```[ \t]*([\w+#-]*)[^\n]*\n(.*?)```", re.S)


def as_problem(task: Any) -> CodeProblem:
    return task if isinstance(task, CodeProblem) else CodeProblem.model_validate(task)


def extract_code(completion: str) -> tuple[str | None, str | None]:
    """(language tag or None, code) of the last fenced block, or (None, None)."""
    blocks = _FENCE.findall(completion)
    if not blocks:
        return None, None
    tag, code = blocks[-1]
    return (tag.strip().lower() or None), code


class CodeEnvironment(Environment):
    kind = "code"

    def __init__(self, reward=None, **options: Any) -> None:
        super().__init__(reward, **options)
        self._sandbox: Sandbox | None = options.get("sandbox")

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = get_sandbox(self.options.get("backend"), image=self.options.get("image"))
        return self._sandbox

    def language_for(self, problem: CodeProblem) -> str:
        if lang := self.options.get("language"):
            return get_language(lang).name
        return problem.solutions[0].language if problem.solutions else "python"

    def messages(self, task: Any) -> list[dict[str, str]]:
        problem = as_problem(task)
        lang = self.language_for(problem)
        name = LANGUAGE_NAMES.get(lang, lang)
        if problem.tests and problem.tests[0].kind == "call":
            how = f"Write a {name} function `{problem.entry_point or 'solution'}` that solves the problem."
        else:
            how = f"Write a complete {name} program that reads standard input and writes standard output."
        limits = f"Time limit: {problem.time_limit_s:g} s per test. Memory limit: {problem.memory_limit_mb} MB."
        fence = f"```{lang}"
        return [
            {"role": "system", "content": self.options.get("system", SYSTEM)},
            {
                "role": "user",
                "content": f"{problem.statement}\n\n{limits}\n\n{how} Put the whole program in one fenced code block ({fence} ... ```).",
            },
        ]

    def sampled_tests(self, problem: CodeProblem) -> list[int]:
        return hardest_tests(problem.tests, int(self.options.get("max_tests", 15)))

    def grade(self, task: Any, completion: str) -> Grade:
        problem = as_problem(task)
        tag, code = extract_code(completion)
        if code is None or not code.strip():
            return Grade(task=0.0, formatted=False, detail="no fenced code block")
        try:
            lang = get_language(tag).name if tag else self.language_for(problem)
        except KeyError:
            lang = self.language_for(problem)
        picked = self.sampled_tests(problem)
        timeout = self.options.get("test_timeout_s") or min(problem.time_limit_s, 12.0)
        report = run_tests(
            self.sandbox,
            code,
            lang,
            [problem.tests[i] for i in picked],
            time_limit_s=float(timeout),
            memory_mb=problem.memory_limit_mb,
            stop_on_failure=True,  # the reward is all-or-nothing: the first failure decides
        )
        passed = report.all_passed and len(report.outcomes) == len(picked)
        detail = f"{lang}: {report.summary()} (of {len(picked)} sampled from {len(problem.tests)})"
        return Grade(task=1.0 if passed else 0.0, formatted=True, detail=detail)
