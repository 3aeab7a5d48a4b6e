"""The answer-checking library: typing, final-answer extraction, verdicts, threads, the LLM judge."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from rlclimb.environments.answer_check import (
    CheckOptions,
    Verdict,
    check,
    check_response,
    check_with_judge,
    extract_final_answer,
    infer_answer_type,
)
from rlclimb.pipelines.llm import LLMClient, LLMConfig, StructuredOutputError
from rlclimb.pipelines.scripted_server import Reply


@pytest.mark.parametrize("answer,kwargs,expected", [
    ("42", {}, "numeric"),
    ("$\\frac{\\sqrt{3}}{2}$", {}, "numeric"),
    ("9.8 m/s^2", {}, "numeric"),
    ("12 apples", {}, "numeric"),
    ("$3x^2 + 2$", {}, "expression"),
    ("$[0, 1)$", {}, "interval"),
    ("$x > 3$", {}, "interval"),
    ("$x = 2$ or $x = 3$", {}, "set"),
    ("no real solutions", {}, "set"),
    ("B", {"choices": ["1", "2", "3"]}, "choice"),
    ("True", {}, "boolean"),
    ("No", {}, "boolean"),
    ("mitochondria", {}, "text"),
    ("Carbon dioxide", {}, "text"),
    ("anything", {"question_type": "proof"}, "proof"),
])
def test_infer_answer_type(answer, kwargs, expected):
    assert infer_answer_type(answer, **kwargs) == expected


@pytest.mark.parametrize("text,expected", [
    ("We get 2+2 = 4, so the answer is \\boxed{4}.", "4"),
    ("First \\boxed{3}, corrected: \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
    ("Natalia sold 48/2 = 24 clips in May.\n#### 72", "72"),
    ("Reasoning...\nFinal Answer: $x = 5$", "$x = 5$"),
    ("**Answer:** 17", "17"),
    ("Thus the answer is 12 cm. Done", "12 cm"),
    ("I am not sure.", None),
])
def test_extract_final_answer(text, expected):
    assert extract_final_answer(text) == expected


def test_check_response_uses_the_stated_answer_not_earlier_numbers():
    response = "Try x = 3: 9 - 6 = 3, no. Try x = 5: 25 - 10 = 15. So the answer is \\boxed{5}."
    assert check_response("5", response)
    assert not check_response("3", response)
    assert check_response("7", "long work\n7")  # no marker: the last line


def test_verdicts_say_how_they_decided():
    assert check("\\frac{1}{2}", "0.5") == Verdict(True, "symbolic")
    assert check("5 km", "5000 m").method == "units"
    assert check("B", "(b)", "choice", choices=["x", "y"]).method == "choice"
    text = check("carbon dioxide", "CO2")
    assert text.equivalent is None and text.method == "text" and not text  # undecided is falsy
    assert check("anything", "else", "proof").equivalent is None
    assert check("5", "").equivalent is False


def test_options_tolerance():
    assert not check("9.81", "9.7")
    assert check("9.81", "9.7", options=CheckOptions(rel_tol=0.02))
    assert check("\\pi", "3.14")  # 3 significant digits by default
    assert not check("\\pi", "3.14", options=CheckOptions(min_significant=4))
    assert check("5 km", "5 m", options=CheckOptions(units=False))  # units off: only the numbers count


@pytest.mark.parametrize("gold,pred", [("\\frac{", "1"), ("$$$", "\\boxed{"), ("\x00", "\\sqrt{-}"), ("1" * 5000, "2")])
def test_never_raises_on_garbage(gold, pred):
    assert isinstance(check(gold, pred), Verdict)


def test_works_outside_the_main_thread():
    # math-verify's timeouts use SIGALRM (main thread only); the checker runs unbounded there instead
    out: list = []
    t = threading.Thread(target=lambda: out.extend([check("\\frac{1}{2}", "0.5"), check("x^2-1", "(x-1)(x+1)")]))
    t.start()
    t.join()
    assert [bool(v) for v in out] == [True, True]


def _client(server, tmp_path) -> LLMClient:
    config = LLMConfig.from_dict({"profiles": {"local": {"base_url": server.base_url, "model": "judge-m", "api_key": "k",
                                                         "backoff_s": 0.01, "timeout_s": 5, "max_retries": 0}},
                                  "roles": {"judge": "local"}})
    return LLMClient(config, tmp_path / "llm.sqlite")


def test_judge_is_asked_only_when_rules_cannot_decide(llm_server, tmp_path):
    llm_server.script(lambda body, n: Reply(json.dumps({"equivalent": True, "reason": "CO2 is carbon dioxide"})))
    client = _client(llm_server, tmp_path)

    async def main():
        try:
            decided = await check_with_judge("1/2", "0.5", llm=client, question="Half?")
            judged = await check_with_judge("carbon dioxide", "CO2", llm=client, question="What gas do we exhale?")
            return decided, judged
        finally:
            await client.aclose()

    decided, judged = asyncio.run(main())
    assert decided == Verdict(True, "symbolic")
    assert judged.equivalent is True and judged.method == "judge"
    assert llm_server.chat_count == 1
    prompt = llm_server.requests[0]["messages"][0]["content"]
    assert "carbon dioxide" in prompt and "CO2" in prompt and "What gas do we exhale?" in prompt


def test_judge_invalid_json_raises_with_a_drop_reason(llm_server, tmp_path):
    llm_server.script(lambda body, n: Reply("they look the same to me"))
    client = _client(llm_server, tmp_path)

    async def main():
        try:
            return await check_with_judge("Paris", "the French capital", llm=client)
        finally:
            await client.aclose()

    with pytest.raises(StructuredOutputError) as e:
        asyncio.run(main())
    assert e.value.drop_reason == "llm_invalid_output"
    assert llm_server.chat_count == 2  # one repair attempt
