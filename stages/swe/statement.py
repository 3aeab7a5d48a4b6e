"""Problem statements for synthetic SWE tasks, written from what the failing tests print and never
from the injected change: the fallback template quotes the failing assertion; with an LLM, an
issue-style report from the same material, refused (template instead) when it leaks the fix."""

from __future__ import annotations

import re

# pytest's failure lines: "E   assert 3 == 4", "E   TypeError: ...", and the test's own location.
_E_LINE = re.compile(r"^E\s{1,4}(.*\S)\s*$", re.M)
MAX_LINES = 12
MAX_TESTS = 5


def failure_lines(log: str, limit: int = MAX_LINES) -> list[str]:
    """The assertion/exception lines pytest printed (in order, repeats once)."""
    seen: list[str] = []
    for line in _E_LINE.findall(log):
        if line not in seen:
            seen.append(line)
        if len(seen) >= limit:
            break
    return seen


def template_statement(failing: list[str], lines: list[str], leak: list[str] = ()) -> str:
    """Issue text a maintainer would file from a red CI run: which tests fail and how (`lines`:
    `failure_lines` of the run). Lines that contain a `leak` snippet (changed code) are left out."""
    lines = [x for x in lines if not any(s and s in x for s in leak)]
    tests = "\n".join(f"- `{t}`" for t in failing[:MAX_TESTS])
    more = f"\n- ... and {len(failing) - MAX_TESTS} more" if len(failing) > MAX_TESTS else ""
    quoted = "\n".join(lines) or "(the tests fail without an assertion message)"
    return (
        f"Some behaviour of the library is broken: {'this test fails' if len(failing) == 1 else 'these tests fail'}"
        f" on the current code.\n\n{tests}{more}\n\nThe failure:\n\n```\n{quoted}\n```\n\n"
        "The tests describe the intended behaviour: fix the library code so that they pass, without "
        "changing the tests."
    )


PROMPT = """You are filing a GitHub issue for a Python library. Its test suite fails; below are the
failing tests and what pytest printed. Write the issue a user would write: a title line, what they
observed, what they expected (as the tests state it), and a minimal example if the output shows
one. Do not guess at or name a fix, a file or a line of the library's code.

Failing tests:
{tests}

pytest output (assertion lines):
{lines}
"""


def llm_prompt(failing: list[str], lines: list[str]) -> str:
    return PROMPT.format(tests="\n".join(failing[:MAX_TESTS]), lines="\n".join(lines) or "(none)")


def leaks(statement: str, snippets: list[str], paths: list[str] = ()) -> str | None:
    """Why a statement gives the fix away, or None: it quotes the fixed code or names the file."""
    for s in snippets:
        if len(s) >= 6 and s in statement:
            return f"quotes the fix's code {s!r}"
    for p in paths:
        if p and p in statement:
            return f"names the changed file {p}"
    return None
