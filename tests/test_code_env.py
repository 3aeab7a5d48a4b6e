"""The code environment: prompt, code extraction, all-or-nothing reward over the sampled (hardest)
tests, per-test timeout, format flag, and the shared reward components."""

from __future__ import annotations

import pytest
from helpers.sandboxes import fast_backend, sandbox_or_skip

from rlclimb.environments.base import get_environment
from rlclimb.environments.code_env import extract_code
from rlclimb.schemas.records import CodeProblem, Solution, TestCase


@pytest.fixture(scope="module")
def env():
    # a generous per-test wall limit: a right answer must pass on a loaded machine too (a 2 s limit
    # failed a right Python answer in CI while other jobs kept both cores busy); the time-limit test
    # has its own short-limit environment
    sandbox_or_skip(fast_backend())
    e = get_environment("code", backend=fast_backend(), test_timeout_s=20)
    yield e
    e.close()


@pytest.fixture(scope="module")
def short_limit_env():
    sandbox_or_skip(fast_backend())
    e = get_environment("code", backend=fast_backend(), test_timeout_s=1)
    yield e
    e.close()


def echo_problem(n: int) -> CodeProblem:
    tests = [TestCase(input="x" * (i + 1) + "\n", output=str(i + 1) + "\n") for i in range(n)]
    return CodeProblem(
        id="len",
        statement="Print the length of the input line.",
        tests=tests,
        solutions=[Solution(language="python", code="print(len(input()))")],
    )


def test_prompt_asks_for_a_code_block(env):
    msgs = env.messages(echo_problem(5))
    assert (
        msgs[0]["role"] == "system"
        and "```python" in msgs[-1]["content"]
        and "Print the length" in msgs[-1]["content"]
    )


def test_extract_last_block():
    assert extract_code("plan\n```py\nprint(1)\n```\nthen\n```cpp\nint main(){}\n```") == (
        "cpp",
        "int main(){}\n",
    )
    assert extract_code("no code here") == (None, None)


def test_reward_all_or_nothing(env):
    p = echo_problem(6)
    good = env.score(p, "Easy.\n```python\nprint(len(input()))\n```")
    assert (
        good.components["task"] == 1.0 and good.components["format"] == 1.0 and "6/6" in good.detail
    ), good.detail
    # Right on short inputs only: fails the longest test.
    partial = env.score(p, "```python\ns = input()\nprint(min(len(s), 5))\n```")
    assert partial.components["task"] == 0.0 and "WA" in partial.detail
    none = env.score(p, "print(len(input()))")
    assert none.components["task"] == 0.0 and none.components["format"] == 0.0
    assert none.detail == "no fenced code block"


def test_cpp_answer_and_timeout(env, short_limit_env):
    p = echo_problem(5)
    cpp = "```cpp\n#include <iostream>\n#include <string>\nint main(){std::string s; std::getline(std::cin, s); std::cout << s.size() << std::endl;}\n```"
    right = env.score(p, cpp)
    assert right.components["task"] == 1.0, right.detail
    slow = short_limit_env.score(p, "```python\nwhile True: pass\n```")
    assert slow.components["task"] == 0.0 and "TLE" in slow.detail


def test_samples_the_hardest_fifteen(env):
    p = echo_problem(40)
    assert env.sampled_tests(p) == list(range(25, 40))
    # Wrong on the 25 short inputs, right on the 15 longest: only the sampled tests count.
    r = env.score(p, "```python\ns = input()\nprint(len(s) if len(s) > 25 else 0)\n```")
    assert r.components["task"] == 1.0 and "of 15 sampled from 40" in r.detail


def test_language_reward_and_length_penalty(env):
    p = echo_problem(5)
    text = "Считаем длину строки.\n```python\nprint(len(input()))\n```"
    r = env.score(p, text, num_tokens=500, max_tokens=1000, pass_rate=1.0)
    assert r.components["lang"] < 1.0 and r.components["length"] == 0.5
    assert r.total == pytest.approx(1.0 + 0.5 * r.components["lang"] - 0.25 * 0.5)
