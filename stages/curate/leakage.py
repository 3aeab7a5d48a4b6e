"""Answer leakage: the question already states its answer -> dropped (`answer_leak`).

Embedded checks, on the question stem (multiple-choice options legitimately contain the answer):
- text: a text or expression answer (long enough to mean something) appears in the question as
  written, after normalization (case, spacing, LaTeX spelling: `\\dfrac` = `\\frac`);
- cue: the question says "the answer is X", "(Ans: X)", "= X ?" for the answer X;
- symbolic: the question states `L = R` where R is equivalent to the answer (answer checker) and
  L is what the question asks for ("Given $x + y = 10$ ..., find $x + y$").
An answer that is one of the lettered options the question lists ("say whether the answer is
A \\binom{10}{4} B P(10, 4) C Neither") is a choice, not a giveaway.
Questions that ask to choose between given values ("Which is larger, 2/3 or 3/5?"), and
transformations whose result is by definition equivalent to the input (simplify, expand,
factor, ...), are exempt from the symbolic check.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from rlclimb.environments.answer_check import (
    check,
    normalize_text_answer,
    strip_math_delimiters,
    unbox,
)
from rlclimb.pipelines.stage import Drop, Record, StageContext

from ..text_keys import canonical_text
from .common import CurateConfig, CurateStage, kept, math_spans, question_stem

_INLINE_CHOICE = re.compile(r"\bwhich\s+(?:is|one\s+is|of\s+these\s+is)?\s*(?:larger|smaller|greater|bigger|less|more|heavier|faster)\b"
                            r"|\b(?:is\s+it|either)\b.+\bor\b|\bor\b.+\?\s*$|\bcompare\b", re.I | re.S)
_TRANSFORM = re.compile(r"\b(?:simplify|expand|factor(?:ise|ize)?|rewrite|express|convert|write|reduce|rationali[sz]e|"
                        r"put|present|restate|state|verify|check|confirm)\b", re.I)
_ASK = re.compile(r"\b(?:find|compute|calculate|determine|evaluate|what\s+is|what\s+are|solve\s+for|give|how\s+many|how\s+much)\b", re.I)


def _contains(haystack: str, needle: str) -> bool:
    """`needle` occurs in `haystack` as a whole token (word boundaries only where it has word ends)."""
    left = r"(?<![\w\\])" if re.match(r"\w", needle) else ""
    right = r"(?!\w|\.\d)" if re.search(r"\w$", needle) else ""
    return re.search(left + re.escape(needle) + right, haystack) is not None


def _equation_tail(haystack: str, needle: str) -> bool:
    """"y=5" found only as the end of "y′′+y′+y=5": the answer solves the question's equation; the
    equation's right side is data, not the answer given away."""
    if "=" not in needle:
        return False
    return all(re.search(r"[+\-−*/·′^}]\s*$", haystack[:m.start()]) for m in re.finditer(re.escape(needle), haystack))


# "Which of the following tables form a group?" answered "a group" / "not a group": the property a
# question asks about is named in it; the answer says whether it holds, which gives nothing away
_PROPERTY_ASK = re.compile(r"[^.?!\n]*\b(?:which|whether|is|are|does|do|can|form|forms|determine)\b[^.?!\n]*\?")


def _without_asked_property(question: str) -> str:
    return _PROPERTY_ASK.sub(" ", question)


def _cue_pattern(answer: str) -> re.Pattern:
    a = re.escape(answer.strip())
    return re.compile(rf"(?:\banswer\s*(?:is|:|=)|\bans\.?\s*[:=]?|\bsolution\s*(?:is|:))\s*\$?\s*{a}(?!\w|\.\d)", re.I)


def _equations(text: str) -> list[tuple[str, str]]:
    out = []
    for span in math_spans(text):
        for part in re.split(r",\s*|\\quad|\\text\{\s*and\s*\}|;", span):
            sides = re.split(r"(?<![<>!\\])=(?!=)", part)
            if len(sides) == 2 and sides[0].strip() and sides[1].strip():
                out.append((sides[0].strip(), sides[1].strip()))
    return out


# "Give the size of the product or state “not defined”." answered "Not defined", "solve each system or conclude
# ‘many solutions’ or ‘no solutions’" answered "many solutions": an outcome the question offers in quotes beside
# the computation is one of its possible answers, not a giveaway
_OFFERED = re.compile(r"\b(?:or|else)\s+(?:state|say|write|answer|put|reply|mark|enter|conclude)\s+"
                      r"((?:[“\"'‘][^”\"'’]{1,40}[”\"'’](?:\s*,\s*|\s+or\s+)?)+)", re.I)
_QUOTED = re.compile(r"[“\"'‘]([^”\"'’]{1,40})[”\"'’]")


def _offered(question: str, answer: str) -> bool:
    return any(normalize_text_answer(q) == normalize_text_answer(answer)
               for m in _OFFERED.finditer(question) for q in _QUOTED.findall(m.group(1)))


def _listed_option(question: str, answer: str) -> bool:
    """"Say whether the answer is A \\binom{10}{4} B P(10, 4) C Neither" answered "\\binom{10}{4}": the
    answer is one of the options the question lists after a letter (A, then B, ...), which the
    question offers to choose from, not a giveaway."""
    a = re.escape(answer.strip())
    for m in re.finditer(rf"(?:^|(?<=\s))\(?([A-E])[.)]?\s+{a}(?=\s+\(?([A-F])[.)]?\s|\s*$)", question):
        letter = m.group(1)
        following = m.group(2)
        if (following and ord(following) == ord(letter) + 1) \
                or (letter > "A" and re.search(rf"(?:^|\s)\(?{chr(ord(letter) - 1)}[.)]?\s", question[: m.start()])):
            return True
    return False


def _all_zero(answer: str) -> bool:
    """A zero matrix or vector: the image of a zero input under any linear map ("Multiply the matrix by
    each vector: (c) (0, 0, 0)"), an outcome printed in the question by right, not given away."""
    if "\\begin{" not in answer and not answer.lstrip().startswith("("):
        return False
    body = re.sub(r"\\(?:begin|end)\{\w+\}|\\\\|&|[(),\s]", " ", answer)
    return bool(body.split()) and all(t == "0" for t in body.split())


def leak(question: str, answer: str, answer_type: str | None, min_chars: int = 4, statement: bool = False) -> str | None:
    """Why the answer is given away by the question, or None. `statement`: the answer is a statement
    or a verdict in words (tagged `statement_answer`), which restates the ask's terms by right."""
    ans = strip_math_delimiters(unbox(answer)).strip().rstrip(".")
    if not ans or answer_type in ("boolean", "choice", "proof") or _offered(question, ans) or _listed_option(question, ans) \
            or _all_zero(ans):
        return None
    if _cue_pattern(ans).search(question):
        return "the question states the answer"
    inline_choice = bool(_INLINE_CHOICE.search(question))
    if not inline_choice and len(ans) >= min_chars:
        if answer_type == "text" and not statement:  # a verdict in words names the property asked about, by right
            a, q = normalize_text_answer(ans), normalize_text_answer(_without_asked_property(question))
            if len(a) >= min_chars and _contains(q, a):
                return f"the question contains the answer {ans[:60]!r}"
        else:  # a plain number ("12", "\frac{1}{2}") in the question is usually data; a closed form is not
            a, q = canonical_text(ans), canonical_text(question)
            distinctive = re.search(r"[a-z]", a.replace("\\frac", "")) if answer_type == "numeric" else re.search(r"[a-z\\]", a)
            if distinctive and _contains(q, a) and not _equation_tail(q, a):
                return f"the question contains the answer {ans[:60]!r}"
    if answer_type in ("numeric", "expression") and not inline_choice:  # "The speed of light is 3x10^8 m/s. What is ...?"
        a, q = canonical_text(ans), canonical_text(question)
        if len(a) >= 2 and re.search(rf"(?:\bis|\bequals|\bwas|=)\s*{re.escape(a)}(?!\w|\.\d|[*^/])", q):
            return f"the question states the value {ans[:60]!r}"
    if answer_type in ("numeric", "expression", "set", "interval") and not inline_choice and not _TRANSFORM.search(question):
        asks = [m.end() for m in _ASK.finditer(question)]
        ask = canonical_text(question[asks[-1]:]) if asks else ""
        for lhs, rhs in _equations(question):
            for given, value in ((lhs, rhs), (rhs, lhs)):
                target = canonical_text(given)
                if target and ask and _contains(ask, target) and check(ans, value, answer_type):
                    return f"the question states {given} = {value}"
    return None


class LeakageConfig(CurateConfig):
    min_chars: int = 4  # shorter answers ("4", "x") are checked by cue and symbolic match only


class LeakageReply(BaseModel):
    leaks: bool
    evidence: str = ""


PROMPT = """Does this question give away its own answer, so that it can be answered by copying \
from the question without solving it? (Multiple-choice options do not count.)

Question:
{question}

Answer:
{answer}

Reply with JSON: {{"leaks": true/false, "evidence": "the giveaway, or empty"}}"""


class LeakageStage(CurateStage):
    name = "leakage"
    version = "7"  # v7: the outcomes "or conclude ‘X’ or ‘Y’" offers; v6: an answer that is one of the lettered options the question lists is no leak
    Config = LeakageConfig

    def embedded(self, record: Record, ctx: StageContext) -> Record | Drop:
        why = leak(question_stem(record), record["answer"], record.get("answer_type"), self.config.min_chars,
                   "statement_answer" in (record.get("tags") or []))
        return Drop("answer_leak", why) if why else record

    async def llm(self, record: Record, ctx: StageContext):
        reply, completion = await self.ask(ctx, PROMPT.format(question=record["question"], answer=record["answer"]),
                                           LeakageReply)
        if reply.leaks:
            return Drop("answer_leak", f"model: {reply.evidence[:200]}", model=completion.model, cost=completion.cost)
        return kept(record, completion)
