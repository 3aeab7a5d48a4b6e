"""Usability: is the gold answer a usable answer to this question, as the text now reads?

Textbook answer keys give hints instead of answers, answer one part of a multi-question
exercise, carry a sibling part's answer, point elsewhere, or ask for an example anyone can
give; PDF text layers flatten exponents, fractions and vectors so that the question no longer
says what the answer answers (`x5 −1` for x^5 − 1, `A {1, 2}` for A = {1, 2}). Each check below
returns a reason, the evidence, and whether it is sure:

- `hint_answer`: the answer advises instead of answering ("Look at (2x + 1).", "Show that the
  kernel ... is SO(n).", a question back); a "Hint." marker alone is not enough (some keys label
  every entry so), the content decides;
- `part_mismatch`: the answer carries another part's label ("{1, 3, 7, 9}; (j) ...") or text
  that is not an answer (a heading of the key), or the key's next entry ("... + C. (2) ..." in
  exercise 1);
- `partial_answer`: the question asks to prove and to find, and the answer is the proof part;
- `open_ended`: the question asks for an example or a construction and the answer gives one;
  "draw / sketch" tasks (`not_checkable`);
- `answer_mismatch`: the answer is about a quantity the question gives, not the one it asks for;
- `layout_damaged`: flattened superscripts (a letter both bare and with glued digits in one
  polynomial, `)−1`, `(ab)2`, `= ex`), lost relation signs (`A {1, 2}`), flattened vectors and
  fractions (`1 2 −1 0 T`, `d dx`), detached vector arrows, control or private-use glyphs, a
  "2923171 (mod 582)" whose value mod 582 is not the answer (292^3171 with its exponent glued on);
- `not_checkable`: a prose answer too long for the answer checker to compare; "what is wrong with
  this proof" critiques; "verify ... for n = 15" tasks whose outcome is given;
- `no_task`: the question is a bare formula ("y = 2x + 3 3x + 2."): the instruction stayed in the
  exercise set's header.
- `needs_context`: the task leans on something printed outside the item ("the two graphs below",
  "the data above", "as before");
- `layout_damaged` also: a bracket closed that was never opened ("the matrix inverse 1 2] 1 x"), a
  radical of a perfect square or a lone number left after a rebuilt formula ("d h \\sqrt{4} \\sqrt{h+x} 1"),
  a `[` never closed, `e \\sqrt{2}x` (an exponent left on the line), a matrix equal to a number;
- `answer_mismatch` also: a gold that fails a sympy check against the printed question
  (answer_consistency: derivative, differential equation, initial and boundary values, an
  antiderivative, a stated maximum or minimum), an answer
  in another unit than the "how many litres" asked.

Sure findings are dropped (by `on_sure`), unsure ones tagged (`on_unsure`, the tag is the reason
with a `maybe_` prefix). The LLM path asks the model only about the items with unsure findings;
its prompt is a versioned file (stages/data/prompts/usability.v3.txt: kinds and counts of values asked,
both asks of a stem, scrambled well-formed formulas, context from elsewhere in the book; v1 and v2
stay for runs that name them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from string import Template
from typing import Literal

from pydantic import BaseModel

from rlclimb.pipelines.stage import Drop, Record, StageContext

from .common import Action, CurateConfig, CurateStage, add_tag, flag, kept


@dataclass(frozen=True)
class Finding:
    reason: str
    detail: str
    sure: bool
    judge: bool = False  # kept only for a judge to grade (tagged needs_judge: train skips it)


# ---- hints and advice ----------------------------------------------------------------------------

_HINT_MARKER = re.compile(r"^\s*(?:\*\*)?hints?\s*(?:\*\*)?\s*[.:]\s*", re.I)
_ADVICE = re.compile(
    r"^\s*(?:use|try|look\s+at|consider|pick|choose|think|recall|remember|note\s+that|notice|observe|apply|start"
    r"|begin|first\s*,|compare|examine|calculate|compute|count|show\s+that|prove\s+that|verify\s+that|check\s+that"
    r"|it\s+suffices|you\s+(?:may|can|might|should|will|need)|we\s+(?:may|can|need\s+(?:to|only|just|not|merely))|what\s+(?:is|are|about|if)"
    r"|how\s+(?:many|about)|why|define|find\s+(?:a|an|the)|draw|sketch|write\s+down|let\s+us|follow)\b",
    re.I,
)
_ANY_WORKS = re.compile(r"\b(?:almost\s+)?any\s+(?:\w+\s+){0,3}(?:will|would|should)\s+(?:work|do)\b", re.I)


def hint_answer(answer: str) -> Finding | None:
    marked = bool(_HINT_MARKER.match(answer))
    body = _HINT_MARKER.sub("", answer, count=1).strip()
    if _ANY_WORKS.search(body):
        return Finding("open_ended", f"{_ANY_WORKS.search(body).group(0)!r}", True)
    if body.endswith("?"):
        return Finding("hint_answer", "the answer is a question", True)
    m = _ADVICE.match(body)
    if m:
        return Finding("hint_answer", f"the answer advises: {m.group(0).strip()!r}", True)
    if marked:
        return Finding("hint_answer", "marked as a hint", False)
    return None


# ---- parts ---------------------------------------------------------------------------------------

_SIBLING_LABEL = re.compile(r"(?:^|[;,.]\s*|(?<![A-Za-z])\s)\(([a-z]|ii|iii|iv|vi{1,3})\)\s+\S")  # "(t)" in "∆V (t) = ..." is an argument
_KEY_HEADING = re.compile(r"\b(?:solutions?|answers?|hints?)\s+(?:for|to)\s+(?:section|chapter|exercises?)\b"
                          r"|\bsection\s+\d+(?:\.\d+)+\s+\d+(?:\.\d+)+\.", re.I)


_PART_REFERENCE = re.compile(r"\b(?:in|from|of|to|using)\s+(?:your\s+answer\s+(?:to|in|from)\s+)?parts?\s+\(?([a-h])\)?", re.I)
_EMPTY_LAST_LABEL = re.compile(r"\n\s*\(?[a-h]\)\s*$")


_NUMBERED_LABEL = re.compile(r"(?:[.;]\)?\s+|\s{2,}|\n\s*)\((\d{1,3})\)\s+\S")  # "(See p. 198.)\n(9) ..." too


def _next_entry(text: str, number: str | None) -> tuple[re.Match, bool] | None:
    """The first "(n) " label after a sentence end in `text`, and whether it is the key's next entry
    (numbered one on from exercise `number`)."""
    m = _NUMBERED_LABEL.search(text)
    if m is None:
        return None
    own = re.match(r"\s*(\d+)\s*(?:\(|$)", number or "")
    return m, own is not None and int(m.group(1)) == int(own.group(1)) + 1


def next_exercise(answer: str, number: str | None) -> Finding | None:
    """"ab(ε^{ax} + ε^{−ax}). (2) 2at + \\frac{2}{t}." for exercise 1: the key's next entry, numbered
    one on, ran into the gold (sure); another number after a sentence end is unsure (an equation's)."""
    if (hit := _next_entry(answer, number)) is None:
        return None
    m, sure = hit
    own = re.match(r"\s*(\d+)", number or "")
    return Finding("part_mismatch", f"the answer runs into another entry: {m.group(0).strip()[:30]!r}", sure) if sure or own is None else None


def trim_solution(record: Record) -> Record:
    """A worked solution (verifiable moved it out of the answer) that runs into the key's next entry
    ("... Therefore the answer is ... (See pages 196 and 198.) (9) \\frac{x^4}{4} + ..."): cut there.
    The answer itself was checked by `next_exercise`."""
    solution = record.get("solution") or ""
    number = str((record.get("source") or {}).get("number") or "") or None
    if (hit := _next_entry(solution, number)) is not None and hit[1]:
        record["solution"] = solution[: hit[0].start(1) - 1].rstrip()
    return record


def part_mismatch(question: str, answer: str, part: str | None) -> Finding | None:
    if _EMPTY_LAST_LABEL.search(question):  # "... M0\na) M1\nb) M2\nc)": each label printed after its text
        return Finding("part_mismatch", "the question ends with an empty part label: labels and parts are out of step", True)
    m = _KEY_HEADING.search(answer)
    if m:
        return Finding("part_mismatch", f"the answer runs into the key: {m.group(0)!r}", True)
    if part and (ref := _PART_REFERENCE.search(question.split("\n")[-1])) and ref.group(1).lower() != part:
        return Finding("part_mismatch", f"the part leans on part ({ref.group(1)}), which is not in this item", False)  # the stem may say enough
    labels = [x.group(1) for x in _SIBLING_LABEL.finditer(answer)]
    if part and any(lab != part for lab in labels):
        return Finding("part_mismatch", f"the answer to ({part}) carries ({labels[0]})", True)
    if not part and labels and not re.search(r"\(([a-h])\)", question):
        return Finding("part_mismatch", f"the answer has part ({labels[0]}), the question has no parts", True)
    return None


_PROVE = re.compile(r"\b(?:prove|show)\s+that\b", re.I)
_FIND = re.compile(r"(?:^|[.?]\s+)(?:find|compute|determine|calculate|what\s+is|what\s+are|give)\b", re.I)
_PROOF_TALK = re.compile(r"^\s*(?:since|because|suppose|assume|let|if|we|to\s+show|note|observe|by|first)\b", re.I)


_YES_NO = re.compile(r"^\s*(?:is|are|does|do|can|could|must|will|would|has|have|should)\b", re.I)
_ASK_SENTENCE = re.compile(r"^\s*(?:find|compute|calculate|determine|evaluate|what|which|how|list|give|describe|express|is|are|does|do|can|must)\b", re.I)


def _sentences(text: str) -> list[str]:
    """Sentences, and the asks a semicolon or an "and" joins ("Determine the Galois groups ...; hence,
    determine the solvability ...", "Find a basis for P_n and compute the dimension of P_n" ask two things)."""
    return [x for x in re.split(r"(?<=[.?!])\s+|\n+|;\s*(?:(?:and\s+)?(?:hence|then|also|thus)\s*,?\s*)?(?=(?:find|determine|compute|decide|give|state)\b)"
                                r"|,?\s+and\s+(?:then\s+|hence\s+|also\s+)?(?=(?:find|determine|compute|calculate|give|state)\s+(?:the|a|an|its|all)\b)", text) if x.strip()]


_ASK_SYMBOL = re.compile(r"\b(?:find|compute|calculate|determine|what\s+is)\s+([A-Za-z])\b(?!\s*[(=])", re.I)
_ASSIGNED = re.compile(r"^\s*([A-Za-z])\s*=")


_ASKS_ELEMENT = re.compile(r"\b(?:find|give|determine)\s+(?:a|an|one)\s+(?:primitive\s+)?(?:element|generator|root|number|vector)\b", re.I)
_FIELD_OR_SET = re.compile(r"^\s*(?:[QRCF]\s*\(|\{)")


def wrong_kind(question: str, answer: str) -> Finding | None:
    """"Find a primitive element in the splitting field ..." answered "Q(i)": the answer is a field
    (or a set) where the question asks for one element."""
    if _ASKS_ELEMENT.search(question) and _FIELD_OR_SET.match(answer):
        return Finding("answer_mismatch", "asks for an element, answers a field or a set", True)
    return None


_IN_WORDS = re.compile(r"(?:describe|explain|discuss)[^.?]{0,60}in\s+words|\(in\s+words\)|explain\s+(?:why|how)", re.I)


def in_words(question: str, answer_type: str | None) -> Finding | None:
    """"Describe (in words) the set A_2 ∪ A_3 ∪ ...": the answer is a description, compared by no rule."""
    if answer_type == "text" and _IN_WORDS.search(question):
        return Finding("not_checkable", "asks for a description in words", True)
    return None


def other_quantity(question: str, answer: str) -> Finding | None:
    """"(n, E) = (451, 231) ... compute D." answered "n = 11 · 41": the answer is about a quantity the
    question gives, not the one it asks for."""
    asked, given = _ASK_SYMBOL.search(question), _ASSIGNED.match(answer)
    if asked and given and asked.group(1) != given.group(1) and re.search(rf"(?<![A-Za-z]){given.group(1)}(?![A-Za-z])", question):
        return Finding("answer_mismatch", f"asks for {asked.group(1)}, answers {given.group(1)} = ...", True)
    return None


# "How many litres drain out in the first 5 minutes?" answered "drains completely at 5 min": the ask
# names the unit of what it wants; an answer whose values all carry units of another kind answers
# another question (when, not how much)
_DIMENSIONS = {
    "volume": r"litres?|liters?|l|L|mL|ml|gallons?|m\^\{?3\}?|cm\^\{?3\}?|m³|cm³",
    "time": r"seconds?|s|sec|minutes?|min|hours?|h|days?|years?|yr|ms",
    "length": r"metres?|meters?|m|cm|mm|km|miles?|feet|ft|inches|in|ly|light[- ]years?",
    "mass": r"kilograms?|kg|grams?|g|mg|tonnes?|solar\s+masses",
    "energy": r"joules?|J|kJ|MJ|eV|keV|MeV|calories?|cal|kcal",
    "force": r"newtons?|N|kN",
    "speed": r"m/s|km/h|km/s|mph",
}
_HOW_MANY_UNIT = re.compile(r"\b(?i:how\s+many)\s+(" + "|".join(u for u in _DIMENSIONS.values()) + r")\b(?!\s*/)")
_VALUE_UNIT = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?\s*(" + "|".join(f"(?:{u})" for u in _DIMENSIONS.values()) + r")(?![\w/^])")


def _dimension(unit: str) -> str | None:
    return next((d for d, units in _DIMENSIONS.items() if re.fullmatch(units, unit)), None)


def other_dimension(question: str, answer: str) -> Finding | None:
    ask = _HOW_MANY_UNIT.search(question)
    if ask is None or (want := _dimension(ask.group(1))) is None:
        return None
    got = {_dimension(m.group(1)) for m in _VALUE_UNIT.finditer(answer)} - {None}
    if got and want not in got:
        return Finding("answer_mismatch", f"asks how many {ask.group(1)} ({want}); the answer gives {', '.join(sorted(got))}", True)
    return None


_EITHER_OR = re.compile(r"\b(?:identify|determine|decide|state|classify|say|tell)\b[^.?;]*?\b([A-Za-z]{3,})\s+or\s+(?:not\s+)?([A-Za-z]{3,})\b", re.I)


_ANSWER_JOINS = re.compile(r";|,\s*(?:so|thus|hence|and|donc|et|alors)\b|\.\s+(?=[A-Z])", re.I)


_HINT_TAIL = re.compile(r"\b(?:hint|indice|astuce|hinweis|pista)\s*:.*$", re.I | re.S)


# the thing an ask names ("find a basis for ...", "compute its dimension"): an answer naming each answers each
_ASK_HEAD = re.compile(r"\b(?:find|compute|calculate|determine|give|state)\s+(?:the\s+|a\s+|an\s+|its\s+|all\s+(?:the\s+)?)([A-Za-z]{4,})", re.I)
# "Give your answer as a multiple of mg.": how to write the answer, not a second ask
_FORMAT_ONLY = re.compile(r"\s*(?:give|express|state|write|round|present)\s+(?:your|the|all\s+(?:your|the))\s+(?:final\s+)?(?:answers?|results?)\b", re.I)


_ASK_FILLER = {"what", "which", "find", "compute", "calculate", "determine", "give", "state", "explain", "your", "result", "answer",
               "also", "this", "that", "these", "those", "then", "with", "from", "each", "following", "does", "done", "have", "there",
               "quel", "quelle", "quels", "quelles", "trouvez", "calculez", "donnez", "expliquez", "votre", "cette", "alors"}


def _content(text: str) -> set[str]:
    return {w.casefold()[:6] for w in re.findall(r"[A-Za-zÀ-ÿ]{4,}", re.sub(r"\\[A-Za-z]+", " ", text))} - \
        {w[:6] for w in _ASK_FILLER}


def _same_ask(first: str, last: str) -> bool:
    """"What is the total work done? Calculate the total work and explain your result.": the second
    sentence asks again for what the first asks (two content words in common): one ask."""
    return len(_content(first) & _content(last)) >= 2


# "Give two different factorizations ..." answered "One factorization is ...": one of the several asked for
_SEVERAL_ASK = re.compile(r"\b(?:give|find|list|name|write\s+down|construct|exhibit)\s+(two|three|four|five|several)\b", re.I)
_ONE_GIVEN = re.compile(r"\s*one\s+(?:[\w-]+\s+){0,3}?(?:is|would\s+be)\b", re.I)
_GIVEN_TOKEN = re.compile(r"[A-Za-z]_\{?\d+\}?|(?<![\w.^{])\d+(?:\.\d+)?(?![\w.])")


def _variant_unanswered(first: str, last: str, answer: str) -> bool:
    """"How many check positions ... with 20 information positions? With 32 information positions?"
    answered for 20 only; "... permuted by S_3? What if x_1, ..., x_4 are permuted by S_4?" answered
    for S_3: the second ask is the first again for other givens (a number or a subscripted symbol the
    first does not have), and the answer mentions none of them."""
    new = set(_GIVEN_TOKEN.findall(last)) - set(_GIVEN_TOKEN.findall(first))
    return bool(new) and any(t not in answer for t in new)


_CONDITIONAL_ASK = re.compile(r"^\s*(?:if|si)\b[^,?]*,\s*(?P<ask>[^?]*)\?", re.I)


def _follow_up_answered(last: str, first: str, answer: str) -> bool:
    """"If the set is a ring, is it also a field?" answered "... is a field"; "If the map is a
    homomorphism, what is the kernel?" answered "... with kernel {1}": the conditional follow-up names
    a thing the first ask does not, and the answer names it too: it answers the follow-up, and with
    it the first ask (a field is a ring; a kernel is only given for a homomorphism)."""
    m = _CONDITIONAL_ASK.match(last)
    if m is None:
        return False
    named = _content(m.group("ask")) - _content(first)
    return bool(named) and bool(named & _content(answer))


_CONDITION = re.compile(r"^\s*if\s+(?:the|this|it|that|such\s+an?)?\s*(?:\w+\s+)?(?:is|are)\s+(?:an?\s+|indeed\s+an?\s+)?(?P<noun>[A-Za-z-]{3,})", re.I)


def _condition_denied(last: str, answer: str) -> bool:
    """"If the set is a ring, is it also a field?" answered "R is not a ring": the follow-up does
    not arise."""
    m = _CONDITION.match(last)
    return m is not None and re.search(rf"\b(?:not|no)\s+(?:an?\s+)?{re.escape(m.group('noun'))}", answer, re.I) is not None


def partial_answer(question: str, answer: str, answer_type: str | None = None) -> Finding | None:
    """The question asks several things and the answer gives one: "Prove X. Find Y." answered by
    the proof; "What are ... of A5? What about A6?" answered for A5; a yes/no question answered
    without its yes or no."""
    from .qtype import verdict_value

    if (n := _SEVERAL_ASK.search(question)) and _ONE_GIVEN.match(answer):
        return Finding("partial_answer", f"asks for {n.group(1).lower()}, the answer gives one", True)
    m = _EITHER_OR.search(question)
    if m and m.group(1).casefold() not in ("whether", "which") and not re.search(
            rf"\b(?:{m.group(1)}|{m.group(2)}|non-?{m.group(2)}|not)\b", answer, re.I):
        return Finding("partial_answer", f"the question asks {m.group(1)} or {m.group(2)}; the answer says neither", True)
    if _PROVE.search(question) and _FIND.search(question) and _PROOF_TALK.match(answer):
        return Finding("partial_answer", "the question asks to prove and to find; the answer argues", True)
    # "How many ... can you order if:\n(d) you allow ...?" is one ask: the part completes the stem's sentence
    sentences = _sentences(re.sub(r":\s*\n+\s*", ": ", _HINT_TAIL.sub("", question)))  # a hint's question ("Indice: quel type ...?") asks nothing
    asks = [x for x in sentences if (_ASK_SENTENCE.match(x) or x.rstrip().endswith("?")) and not _FORMAT_ONLY.match(x)]
    last = next((x for x in reversed(sentences) if x.rstrip().endswith("?")), None)
    if last and _YES_NO.match(last) and verdict_value(answer) is None and len(answer.split()) > 3:
        return Finding("partial_answer", f"a yes/no question ({last[:40]!r}) answered without yes or no", True)
    if len(asks) >= 2:
        named = set(re.findall(r"\b[A-Z][A-Za-z]?\d+\b", asks[-1])) - set(re.findall(r"\b[A-Z][A-Za-z]?\d+\b", asks[0]))
        missing = [x for x in named if x not in answer]
        if missing:
            return Finding("partial_answer", f"the answer does not mention {missing[0]!r}, which the question asks about", True)
        if (_same_ask(asks[0], asks[-1]) and not _variant_unanswered(asks[0], asks[-1], answer)
                or _follow_up_answered(asks[-1], asks[0], answer) or _condition_denied(asks[-1], answer)):
            return None
        bare_value = not re.search(r"[A-Za-z]{3,}", answer) and ";" not in answer
        if len([x for x in _ANSWER_JOINS.split(answer) if x.strip()]) >= len(asks) \
                or len(re.findall(r"(?<![<>!=≤≥])=(?!=)", answer)) >= len(asks):  # "n = 2, n = 11.": one stated value per ask
            return None  # "Volume = 4.93; area of surface = 12.57": one answer per ask
        heads = [m.group(1).casefold()[:5] for x in sentences for m in _ASK_HEAD.finditer(x)]
        if len(heads) >= 2 and all(h in answer.casefold() for h in heads):
            return None  # "... find a basis and compute its dimension." answered "Subspace of dimension 2 with basis {...}"
        if len(answer) < 200:  # one set or a sentence for two asks answers one; a number or a list may answer both
            return Finding("partial_answer", f"{len(asks)} asks, one short answer", bare_value or bool(re.fullmatch(r"\s*\{.*\}\s*\.?", answer) or re.search(r"\b(?:is|are)\b", answer)))
    return None


# ---- examples and drawings -------------------------------------------------------------------------

_EXAMPLE_ASK = re.compile(r"\b(?:give|find|construct|make\s+up|produce|write\s+down|provide|exhibit)\s+"
                          r"(?:an?\s+|one\s+|two\s+|some\s+)?(?:explicit\s+|simple\s+)?(?:examples?|counterexamples?|instances?)\b"
                          r"|\bmake\s+up\b|\bgive\s+examples?\b|\bexamples?\s+as\s+follows\b", re.I)
_EXAMPLE_GIVEN = re.compile(r"\bfor\s+example\b|\bhere\s+is\s+one\b|\bone\s+(?:such\s+)?example\b|\be\.g\.|\bsuch\s+as\b"
                            r"|\bthe\s+simplest\s+example\b|\bone\s+such\b|\bare\s+possible\b|^\s*(?:let|take|put)\b", re.I)
_ANY_SOLUTION_ASK = re.compile(r"\b(?:find|give|trouvez|donnez)\s+(?:a|an|one|une)\s+(?:nontrivial|non-trivial|non\s+triviale?|non-triviale?)\s+solutions?\b"
                               r"|\b(?:trouvez|donnez)\s+une\s+solution\s+non[- ]triviale\b", re.I)
_NOT_POSSIBLE = re.compile(r"\b(?:not|no|never|im)\s*possible\b|\bno\s+such\b|\bcannot\s+exist\b|\bdoes\s+not\s+exist\b", re.I)
_DRAW = re.compile(r"(?:^|[.;:]\s*|\n\s*(?:\([a-h]\)\s*)?|\b(?:and|et)\s+)(?:draw|sketch|plot|illustrate|shade"
                   r"|dessine[rz]?|trace[rz]?|esquisse[rz]?)\b", re.I)  # French: "Dessiner le champ de directions"


_ESTIMATE = re.compile(r"(?:^|[.?!]\s+)(?:estimate|roughly\s+estimate|make\s+an\s+estimate)\b", re.I)
_ESTIMATE_OPEN = re.compile(r"\b(?:as\s+long\s+as\s+it\s+is\s+reasonable|what\s+assumptions|state\s+your\s+assumptions|order\s+of\s+magnitude)\b", re.I)
_CRITIQUE = re.compile(r"\bwhat(?:'s|’s|\s+is|\s+was)\s+wrong\s+with\b|\b(?:find|spot|identify)\s+the\s+(?:error|flaw|mistake)\b"
                       r"|\bwhere\s+is\s+the\s+(?:error|flaw|mistake)\b", re.I)
_WORD = re.compile(r"(?<![A-Za-z\\])(?!(?:log|sin|cos|tan|cot|sec|exp|lim|max|min|det|mod)(?![A-Za-z]))[A-Za-zÀ-ÿ]{3,}")


# "Find an expression for the velocity ... Draw curves to show ...": a drawing beside asks for values
_VALUE_ASK = re.compile(r"(?:^|[.;?]\s*|\b(?:and|also|then)\s+)(?:find|compute|calculate|determine|deduce|evaluate|what\s+is"
                        r"|trouvez|calculez|déterminez)\b", re.I)


def open_ended(question: str, answer: str) -> Finding | None:
    if _DRAW.search(question):
        # the asks of this part only: a stem's "(a) Find ..." is another part's ask
        own = re.split(r"(?:^|\s)\([a-z]\)\s", question)[-1]
        if _VALUE_ASK.search(own) and stated_value(answer) and not _ONE_OF_MANY.search(answer):
            return Finding("not_checkable", "a drawing task that also asks for values, which the answer gives", False, judge=True)
        return Finding("not_checkable", "a drawing task", True)
    if _CRITIQUE.search(question):  # "What is wrong with this claimed proof ...?": an explanation
        return Finding("not_checkable", "asks what is wrong with an argument", True)
    if not _WORD.search(re.sub(r"\\[A-Za-z]+", " ", question)):  # "y = 2x + 3 3x + 2.": the set's instruction stayed in its header
        return Finding("no_task", "the question is a bare formula: what to do with it is not said", True)
    if _ESTIMATE.search(question) and (_ESTIMATE_OPEN.search(question) or re.match(r"\s*[∼~≈]", answer)):
        return Finding("open_ended", "an order-of-magnitude estimate: any reasonable value is right", True)
    if _ANY_SOLUTION_ASK.search(question):  # "find a nontrivial solution to u_xt = u_xx": a family, the gold is one member
        return Finding("open_ended", f"asks for {_ANY_SOLUTION_ASK.search(question).group(0)!r}: one of many", True)
    if _EXAMPLE_ASK.search(question) and not _NOT_POSSIBLE.search(answer[:120]):
        sure = bool(_EXAMPLE_GIVEN.search(answer[:200]))
        return Finding("open_ended", "asks for an example" + ("; one of many is given" if sure else ""), sure)
    return None


# ---- context from elsewhere in the book ------------------------------------------------------------

_ELSEWHERE = re.compile(r"\bthe\s+(?:\w+\s+)?(?:data|values|matrix|matrices|functions?|equations?|system|sets?|numbers|results?|information"
                        r"|list|examples?|statements?|graphs?|polynomials?|vectors?|maps?|relations?)\s+(?:above|below|given\s+(?:above|earlier|before)"
                        r"|from\s+before|in\s+the\s+(?:text|section|chapter))\b|\b(?:as|like)\s+(?:before|above)\b", re.I)


def elsewhere(question: str) -> Finding | None:
    """"Are the two graphs below equal?", "the data above", "as before": the task leans on something
    printed outside the item (cleanup drops the numbered references: "Example 3", "the previous
    exercise"). Graphs below are drawings: sure; the rest may be in the stem: unsure."""
    if (m := _ELSEWHERE.search(question)) is None:
        return None
    return Finding("needs_context", f"refers to {m.group(0)!r}", bool(re.search(r"graphs?\s+below", m.group(0), re.I)))


# ---- notation damage --------------------------------------------------------------------------------

_GLUED = re.compile(r"(?<![A-Za-z\d.])(\d*)([a-z])(\d+)(?![\w(])")  # "5x2", "x4", "c1"
_BARE = r"(?<![A-Za-z\\]){l}(?![A-Za-z\d])"
_INVERSE = re.compile(r"(?:\)|(?<![A-Za-z])[A-Z])[−-]1(?!\d|[.,]\d|\s*[\w(=])|(?<![A-Za-z])[A-Z]\s[−-]1(?=\\vec\b|\\mathbf\b)")  # "(1 + i)−1", "A−1" (not "n −1", not a restated "A−1 =")
_PAREN_POWER = re.compile(r"\)[2-9](?![\d.,])(?=\s|$|[=+−\-])")  # "(ab)2 = e"
_EXP_E = re.compile(r"(?:=|\band)\s*e[x-z](?![\w(])|(?<![\w\\])e[−-][x-z](?!\w)"  # "f(x) = ex", "e−x"
                    r"|(?<![A-Za-z\\^])e(?:[−-]?\d+[a-z]|[−-][a-z]|[α-ω][a-z]|\([^()]{1,30}\)[a-z])(?![A-Za-z(])")  # "e2t", "e−t", "eαx", "e(−2+ √ 2)x"
# "C_1e \\sqrt{2}x" for C_1 e^{\\sqrt{2}x}: a lone e before rebuilt notation is an exponent left on the line
_EXP_BESIDE = re.compile(r"(?<![A-Za-z\\{])e\s+\\(?:sqrt|frac)\b")
_LOST_RELATION = re.compile(r"(?:(?<![A-Za-z])[A-Z][A-Za-z]?\d?|\|[A-Z]\||P\([A-Z]\)|(?<!\([a-z])\))\s+(?:\{(?!\s*\})|∅)|\|[A-Za-z∩∪ ]+\|\s+\d")
_FLAT_ARGUMENT = re.compile(r"\(\s*(?:[a-z](?:_\d)?\s+){2,}[a-z](?:_\d)?\s*\)")  # "h( x y z )": a column vector's entries in a row
_FLAT_VECTOR = re.compile(r"(?:(?<=\s)|^)(?:[−-]?(?:\d+[a-z]?|[a-z](?:\^\d)?′*)\s+){2,}T(?=\s|$|[.,;:∈=])")  # "1 2 −1 0 T", "t t^2 t^3 T"
_FLAT_INDICES = re.compile(r"(?<![\w\\])[a-z]\d,\d[a-z]\d,\d")  # "t1,1t2,2t3,3": t_{1,1} t_{2,2} t_{3,3} on the line
_FLAT_FRACTION = re.compile(r"(?<![\w\\])d\s+d[a-z]\b|(?<![\w\\])d[a-z]\s+d[a-z](?![\w(])")
_DETACHED_ARROW = re.compile(r"(?<![A-Za-z])\u20d7(?!\s?[A-Za-z])")  # "⃗F", "⃗ B(t)", "F⃗" name their vector
_BAD_GLYPHS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\ue000-\uf8ff]|∞\s?Í|Í\s?\^?\{?∞")  # "∞Í n=1": a sum sign from a symbol font
_FLAT_NUMBERS = re.compile(r"(?<![\w.,(])(?:[−-]?\d+\s+){3,}[−-]?\d+(?![\w.,])")
# answer-side: "10 4" (a binomial flattened), "6 2 (8 5)", ". 2−2·525 −4", "an 5 + 4(n −1)" (a_n = ..., "=" lost)
_PERMUTATION_TALK = re.compile(r"\b(?:permutations?|cycles?|transpositions?)\b|\bS_\{?\d|\bS_n\b|\bA_\{?\d", re.I)
_CYCLE = re.compile(r"\((?:\d+\s+)+\d+\)")
_ADJACENT_NUMBERS = re.compile(r"(?<![\w.,])\d+\s+\d+(?![\d.,])")  # "10 4", "5 3e2t" (5/3 e^2t)
_LEADING_PUNCT = re.compile(r"^\s*[.,;:]\s*\S")
_SYMBOL_THEN_VALUE = re.compile(r"^\s*[A-Za-z]{1,2}\d?\s+(?=[\d(−-])(?!\([^()]{1,12}\)\s*[=≈<>≤≥])")  # not "V (r) = ...": an argument
# both sides: stacked fractions flattened: "f(p/q) = 3p 3q", "p + 1 p −2"
_FLAT_TERMS = re.compile(r"(?<![\w])\d+[a-z]\s+\d+[a-z]\b|[+−-]\s*\d+\s+[a-z]\s*[+−-]")
_BIG_BASE = re.compile(r"\b(\d{6,})\s*\(mod\s*(\d+)\)")
# notation the rebuild got half right: an exponent fraction left beside its base ("6x− \frac{1}{2}"
# for 6x^{-1/2}, "x \frac{3}{2}"), a power read as a root's index ("x\sqrt[3]{x^2 − a^2}" for
# x^3 sqrt(...)), a function name raised alone ("3^{sin} θ"), a relation sign read as a spaced comma
# ("(x −y , w)" for x − y ≠ w), an integral sign read as "Z" ("Find Z (4x^3 + 1) dx")
_HALF_FRACTION = re.compile(r"(?:(?<=\d)|(?<=[\s(=+−\-·}]))(?![aAI]\s)[A-Za-zθ](?:[−-]\s?|\s)\\frac\{\d+\}\{\d+\}(?=\s*(?:[+−\-=.,;}_]|$)|\s+[A-Za-z]{3,})")
_ROOT_INDEX_GLUED = re.compile(r"[A-Za-z)]\\sqrt\[\d+\](?!\{\d+\})")  # (a number's root after a coefficient reads: "a + b\\sqrt[3]{2}")
_FUNCTION_EXPONENT = re.compile(r"\^\{?(?:sin|cos|tan|cot|sec|log|ln|exp)\}?(?![A-Za-z(])")
_SPACED_COMMA = re.compile(r"(?<![A-Za-z])(?!M\s)[A-Za-z\d)]\s+,\s+(?!M\b)[A-Za-z\d(](?![A-Za-z])")  # M: a matrix left out
_INTEGRAL_Z = re.compile(r"(?<![\w\\])Z\s+(?![_^\[])[^.?;]{1,80}?\sd[a-zθ](?![A-Za-z])")
# text of another block glued in: a one-word heading sentence ("... find dw/dv. Differentiate", "Examples.")
_GLUED_HEADING = re.compile(r"(?:^|[.?!:]\s+)(?:Examples?|Exercises?|Answers?|Solutions?|Problems?|Exemples?)\.(?=\s|$)"
                            r"|[.?!]\s+(?:Differentiate|Integrate|Find|Solve|Simplify|Evaluate|Prove|Show)\s*:?\s*$")
# a flattened 2x2 matrix with a letter entry: "Trouvez t tel que 1 t −1 2 n'est pas inversible"
_FLAT_SMALL_MATRIX = re.compile(r"(?<![\w.,^_{])(?:[−-]?(?:\d{1,2}|[a-z])\s+){3}[−-]?(?:\d{1,2}|[a-z])(?![\w.,}])")


def _small_matrix(text: str) -> re.Match | None:
    """Four entries in a row, three of them numbers ("1 t −1 2"): a 2x2 matrix with its rows lost."""
    for m in _FLAT_SMALL_MATRIX.finditer(_CYCLE.sub(" C ", text)):  # cycles "(1 3 4 5)" are no matrix
        if sum(bool(re.search(r"\d", x)) for x in m.group(0).split()) >= 3:
            return m
    return None


def glued_exponent(question: str, answer: str) -> Finding | None:
    """"Calculate 2923171 (mod 582)" is 292^3171: when the big number read as printed does not give
    the answer modulo n, its exponent was glued on (sure); when it does, it is the number."""
    m = _BIG_BASE.search(question)
    if not m:
        return None
    value = re.fullmatch(r"\s*(\d+)\s*\.?\s*", answer)
    if value is None:
        return Finding("layout_damaged", "question: an exponent may be glued to its base", False)
    if int(m.group(1)) % int(m.group(2)) == int(value.group(1)) % int(m.group(2)):
        return None
    return Finding("layout_damaged", f"question: {m.group(1)} mod {m.group(2)} is not {value.group(1)}: an exponent glued on", True)


def _flattened_powers(text: str) -> str | None:
    """A letter that is both bare and glued to digits, with an attached coefficient or other powers,
    in the same run of math: `x5 −1 = (x+1)(x4 +x3 ...)`, `5x2 + 3x −4`, `x4 −2x2 + 25`. Subscripts
    glue digits too (`c1 f1 + c2 f2`), but they start at 1 and a subscripted letter is seldom also
    bare (`Q[x]`, `(x)`, `+ x`)."""
    glued: dict[str, list[tuple[str, str]]] = {}
    for m in _GLUED.finditer(text):
        glued.setdefault(m.group(2), []).append((m.group(1), m.group(3)))
    for letter, uses in glued.items():
        coefficient = any(c for c, _ in uses)
        suffixes = {s for _, s in uses}
        if "1" in suffixes:  # x^1 is never printed: "x1, x2" are subscripts
            continue
        bare = re.search(_BARE.format(l=letter) + r"\s*[+−\-)\]]|[+−\-(\[]\s*\d*" + _BARE.format(l=letter), text)
        if bare or coefficient and len(suffixes) >= 2:
            return f"{letter}{sorted(suffixes)[-1]}"
    return None


_ASKED = re.compile(r"\b(?:find|compute|calculate|determine|evaluate|simplify)\s+([^.?\n]{2,40})[.?]?\s*$", re.I)
_HEADER_TAIL = re.compile(r"\?\s+\d+(?:\.\d+)*\s+(?:exercises|chapter|section|problems)\s+\d+\s*$", re.I)
# a running header glued on: "... sont des solutions. 76CHAPITRE 2. ÉQUATIONS DIFFÉRENTIELLES ORDINAIRES"
_CAPS_TAIL = re.compile(r"(?:\d+\s?)?[A-ZÀ-Ý’'\-]{4,}(?:[\s.\d]+[A-ZÀ-Ý’'\-]{2,}){2,}\s*$"
                       r"|\d+\s?(?:CHAPTER|CHAPITRE|SECTION|CAP[IÍ]TULO|KAPITEL)\s?\d+\.?\s*[A-ZÀ-Ý’'\s.\-]+$")
_SUBSCRIPT_POWER = re.compile(r"(?<![A-Za-z])[a-z]\d\s\d(?=\s*[=+−\-])"  # "x2 2 = 0": x_2^2
                              r"|(?<![A-Za-z])[a-z]\^\{?\d\}?\s\d(?=\s*[=+−\-])")  # "x^2 2 = 0": the same, rebuilt half-way


def restated_other(question: str, answer: str) -> Finding | None:
    """"Find A × C." answered "A × B = {...}": the answer names what it gives, and it is another
    expression of the same shape (a sibling part's)."""
    m = _ASKED.search(question)
    given = re.match(r"\s*([^=]{2,40}?)\s*=", answer)
    if not m or not given:
        return None
    asked, said = re.sub(r"\s+", "", m.group(1)).rstrip(".?"), re.sub(r"\s+", "", given.group(1))
    if len(asked) == len(said) >= 3 and asked != said and sum(a != b for a, b in zip(asked, said)) == 1 \
            and not re.search(r"[a-z]{2}", said):
        return Finding("answer_mismatch", f"asks for {m.group(1).strip()!r}, answers {given.group(1).strip()!r}", True)
    return None


_SET_DEF = re.compile(r"(?<![A-Za-z])([A-Z])\s*=\s*\{([^{}]*)\}")
_SET_ANSWER = re.compile(r"^(?:[^=]*=\s*)?(?:\{([^{}]*)\}|(∅))\s*\.?$")


def _set_elements(body: str) -> frozenset[str] | None:
    if re.search(r"\.\s?\.|·\s?·|…|[:|]", body):  # "{1, 2, ..., 10}", "{x : ...}": not listed in full
        return None
    return frozenset(x.strip() for x in body.split(",") if x.strip())


def _evaluate_sets(expr: str, sets: dict[str, frozenset[str]]) -> frozenset[str] | None:
    """Left to right with parentheses: A ∩ (B ∪ C), A \\ B, A − B. None when anything else is in it
    (a complement bar, ×, a power set): nothing is claimed about what it cannot read."""
    tokens = re.findall(r"[A-Z]|[∩∪\\−()-]|\S", expr.replace("\\setminus", "\\"))
    pos = 0

    def operand():
        nonlocal pos
        if pos >= len(tokens):
            return None
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            value = expression()
            if pos >= len(tokens) or tokens[pos] != ")":
                return None
            pos += 1
            return value
        return sets.get(tok)

    def expression():
        nonlocal pos
        value = operand()
        while value is not None and pos < len(tokens) and tokens[pos] in "∩∪\\−-":
            op = tokens[pos]
            pos += 1
            right = operand()
            if right is None:
                return None
            value = value & right if op == "∩" else value | right if op == "∪" else value - right
        return value

    result = expression()
    return result if pos == len(tokens) else None


def set_answer_mismatch(question: str, answer: str) -> Finding | None:
    """"Let A = {1, ..., 5}, B = ..., C = .... Find A ∩ (B ∪ C)." answered "{1}": worked out from the
    sets as printed, the answer is another set: a bar or a sign of the question was lost (or the key
    is wrong). Either way the pair does not check."""
    m, given = _ASKED.search(question), _SET_ANSWER.match(answer.strip())
    if not m or not given:
        return None
    sets = {}
    for name, body in _SET_DEF.findall(question):
        elements = _set_elements(body)
        if elements is None:
            return None
        sets[name] = elements
    if not sets or not re.fullmatch(r"[A-Z∩∪\\−()\s-]+|.*\\setminus.*", m.group(1).strip().rstrip(".?")):
        return None
    value = _evaluate_sets(m.group(1).strip().rstrip(".?"), sets)
    stated = frozenset() if given.group(2) else _set_elements(given.group(1) or "")
    if value is None or stated is None or value == stated:
        return None
    shown = "{" + ", ".join(sorted(value)) + "}"
    return Finding("answer_mismatch", f"from the sets as printed, {m.group(1).strip()} = {shown}, not the answer's", True)


_CALCULUS_ASK = re.compile(r"\\frac\{d\^?\d?[a-zθ]|\bdifferentiat|\bd[a-z]/d[a-z]\b|∫|\bintegra", re.I)
_LONE_LETTER = re.compile(r"(?<![A-Za-z\\])[a-z](?![A-Za-z])")


def foreign_variable(question: str, answer: str) -> Finding | None:
    """"Find dy/dx for y = 17x + 12x^2." answered "17 + 24a; 24": a derivative or integral of the
    printed function has only its letters (and the constant of integration), so a letter the question
    lacks says the answer is for another function (a misprint, or notation the text layer changed)."""
    if not _CALCULUS_ASK.search(question):
        return None
    strip = lambda t: re.sub(r"\\[A-Za-z]+|\b(?:log|ln|sin|cos|tan|cot|sec|exp|arc\w*|max|min)\b", " ", t)  # noqa: E731
    have = {c for w in re.findall(r"(?<![A-Za-z])[a-z]{1,2}(?![A-Za-z])", strip(question)) for c in w}  # "y", "17x", "ax"
    extra = sorted(set(_LONE_LETTER.findall(strip(answer))) - have - {"c", "d", "e"})
    if extra:
        return Finding("answer_mismatch", f"the answer has {extra[0]!r}, which the printed question lacks", True)
    return None


def restated_without_relation(question: str, answer: str) -> str | None:
    """"Find B ∪C." answered "B ∪C N": the answer repeats what is asked, and the "=" between is lost."""
    m = _ASKED.search(question)
    if not m:
        return None
    asked = re.sub(r"\s+", "", m.group(1))
    compact = re.sub(r"\s+", "", answer)
    if len(asked) >= 2 and compact.startswith(asked) and len(compact) > len(asked) and compact[len(asked)] not in "=≡:≈<>≤≥,.":
        return m.group(1).strip()
    return None


# "3 · (+1) \\begin{pmatrix} 2 & 2 \\\\ 3 & 0 \\end{pmatrix} + ... = −13": a matrix equal to a number is a
# determinant whose bars the text layer lost (read as a matrix's brackets)
_MATRIX_IS_NUMBER = re.compile(r"\\end\{pmatrix\}\s*=\s*[−-]?\s*\d+(?:[.,]\d+)?\s*\.?\s*$")
_COLUMN_PAIR = re.compile(r"\\begin\{pmatrix\}\s*[^&\\]{1,12}?\s*\\\\\s*[^&\\]{1,12}?\s*\\end\{pmatrix\}")
_MATRIX_TALK = re.compile(r"\\begin\{|\b(?:R|C|Q|Z|F)\^\{?\d|\bRep_|\b(?:matri|vector|vecteur|system|syst[eè]me|eigen|propre|column|colonne|basis|span|coordinat)", re.I)


def _unbalanced_script(text: str) -> str | None:
    """A superscript group whose parentheses do not balance ("e^{(−2+\\sqrt{2}} )x"): the rebuild
    closed the exponent in the middle of it."""
    for m in re.finditer(r"\^\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        group = text[m.end():i - 1]
        if group.count("(") != group.count(")"):
            return text[m.start():i + 3]
    return None


# (or one holding only brackets around nothing and stray digits, "\sqrt{( )_2 ( )_2}": the rebuild
# took a radicand's big parentheses and left what they held on other lines)
_EMPTY_ARGUMENT = re.compile(r"\\(?:sqrt|frac|binom)(?:\[[^\]]*\])?\{(?:\s*|[^{}A-Za-z\\]*[(\[]\s*[)\]][^{}A-Za-z\\]*)\}")
_REBUILT = re.compile(r"\\[a-z]+\{|[_^]\{")


def _malformed_markup(text: str) -> str | None:
    """LaTeX the notation rebuild wrote that cannot be what the page shows: a radical, fraction or
    binomial with an empty argument ("\\sqrt{ }", "\\sqrt{( )}": its radicand spilled beside it), or braces that
    do not balance ("\\frac{2}{R}^R}_1"). Only text with rebuilt markup is checked: plain sets
    "{1, 3}" are the book's own braces."""
    if not _REBUILT.search(text):
        return None
    if (m := _EMPTY_ARGUMENT.search(text)) is not None:
        return m.group(0)
    depth = 0
    for i, ch in enumerate(re.sub(r"\\[{}]", "", text)):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return text[max(0, i - 15):i + 5]
    return text[-20:] if depth else None


_LABEL_PAREN = re.compile(r"(?:^|\n)\s*(?:[a-zA-Z]|\d{1,2}|[ivx]{1,4})\)|(?:[.:;,]\s+|\s)(?:[a-zA-Z]|\d{1,2}|[ivx]{1,4})\)(?=\s|$)"
                          r"|\b(?:parts?|partie|question|item)\s+(?:[a-z]|[ivx]{1,4})\)")  # "a) ...", "2) ...", "in part a)": labels close no bracket


def _unbalanced_brackets(text: str) -> str | None:
    """A closing bracket with nothing open before it ("the matrix inverse 1 2] 1 x"): the text layer
    dropped the rest of a bracketed block (a matrix, a big parenthesis). Round and square brackets
    count as one kind, so half-open intervals "[0, 1)" balance."""
    masked = _LABEL_PAREN.sub(" ", re.sub(r"\\[{}\[\]()]|\\(?:left|right|big|Big)\S?", " ", text))
    depth = 0
    for i, ch in enumerate(masked):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if depth < 0:
            return masked[max(0, i - 15):i + 5]
    return None


def _unclosed_bracket(text: str) -> str | None:
    """A square bracket opened and never closed ("4^6 − [\\binom{4}{1}3^6 − ... 1^6g ."): the closing
    one was read as another glyph. Square only: a round one left open is often a label or a smiley."""
    masked = re.sub(r"\\[{}\[\]()]|\\(?:left|right|big|Big)\S?|\\sqrt\[[^\]]*\]", " ", text)
    depth = sum({"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0) for ch in masked)  # "[0, 1)" balances
    return masked[masked.rfind("["):][:30] if depth > 0 and masked.count("[") > masked.count("]") else None


# a radical of a perfect square ("d h \sqrt{4} \sqrt{h+x} 1"): nobody prints one; the rebuild put a
# stray digit under a sign whose radicand went elsewhere
_PERFECT_SQUARE = r"\\sqrt\{\s*(?:1|4|9|16|25|36|49|64|81|100)\s*\}"
# (but a denominator that is a product of two norms, "\\frac{(1)(1) + ...}{\\sqrt{1}\\sqrt{3}}", is a cosine's formula)
_SQUARE_RADICAND = re.compile(rf"(?<!\}}\{{){_PERFECT_SQUARE}|{_PERFECT_SQUARE}(?!\s*\\sqrt\{{[^{{}}]*\}}\s*\}})")
# a fraction inside a subscript ("log_{ε\\frac{1+x}{1−x}}": the log's argument sank into its base) or
# over 1 ("A\\frac{2}{1}" for A_1^2): a rebuild that stacked the wrong glyphs
_MISPLACED_FRACTION = re.compile(r"_\{[^{}]*\\frac|\\frac\{[^{}]+\}\{\s*1\s*\}")
# a lone number after rebuilt markup at the end of a formula ("... \sqrt{d+∆t} 2π", "... \sqrt{h+x} 1"):
# a fraction's denominator or an index that lost its place
_STRAY_TAIL = re.compile(r"(?:\\(?:sqrt|frac)\{[^{}]*\}(?:\{[^{}]*\})?|[}⊕])[^=,;]{0,12}?(?<![=+−\-,;(])(?<!\band)(?<!\bet)(?<!\bor)\s+\d+π?\s*\.?$")


# "ω= π \\frac{15}{2} q": a letter the question never uses, alone after rebuilt markup at the end: a
# radical's or a bracket's glyph read as a letter
_STRAY_LETTER = re.compile(r"\\(?:frac|sqrt)(?:\[[^\]]*\])?\{[^{}]*\}(?:\{[^{}]*\})?\s+([a-zA-Z])\s*\.?\s*$")


# markup no author writes, left by a rebuild that stacked the wrong glyphs: a zero denominator
# ("\\frac{2}{0}" for μ_0^2), an empty accent or radical ("m\\vec{}"), a script ending in an operator
# ("π_{M+}^m"), a unit fraction after a closed formula ("d \\frac{h}{h+x} \\frac{1}{4}": the exponent 1/4),
# a binomial half rebuilt beside another ("(6)\\binom{8}{5}" for C(6,2) C(8,5)), a sum's limits left on
# the line ("∑∞ n=1 nimpaire", "sin(nπt). ∞ n=1", "∑^{∞} n=3"), an order sign before a set ("n < {0, 2, 4, 6}": ∉ misread), a fraction over a lone symbol
# ("mR\\frac{2}{⊕}": R_⊕^2 scrambled), a vector arrow read as "®" ("= ®0"), a log of three bare letters at the
# end ("2πl ln ρ r_2 r_1" for ρ/(2πl) ln(r_2/r_1): a fraction laid flat)
_IMPOSSIBLE_MARKUP = re.compile(r"[<>≤≥]\s*\{[^{}]*,[^{}]*\}|\\frac\{[^{}]*\}\{\s*[^\w\s{}\\]\s*\}|∑\s*∞|(?<![\^{_])∞\s+[a-z]\s*=\s*[−-]?\d"
                                r"|∑\^\{?∞\}?\s+[a-z]\s*=\s*\d|®|\b(?:ln|log(?:_\S+)?)\s+(?:[A-Za-zα-ω](?:_\d)?\s+){2,}[A-Za-zα-ω](?:_\d)?\s*\.?$|\\frac\{[^{}]*\}\{\s*0\s*\}|\\(?:vec|hat|bar|sqrt)\{\s*\}|[_^]\{[^{}]*[+−\-=]\s*\}|\(\d+\)\\binom\b"
                                r"|[})]\s*\\frac\{1\}\{[2-9]\}\s*\.?\s*$")


def layout_damage(question: str, answer: str, verdict: bool = False) -> Finding | None:
    """The first sure finding, else the first unsure one. `verdict`: the answer is a yes/no, which
    a flattened power in the question leaves readable (`x3 + x + 1` over Z2 is still x^3 + x + 1)."""
    found: list[Finding] = []
    if _MATRIX_IS_NUMBER.search(answer):
        found.append(Finding("layout_damaged", "answer: a matrix equal to a number: determinant bars read as brackets", True))
    if _COLUMN_PAIR.search(answer) and not _MATRIX_TALK.search(question):  # "ω= π q (15 over 2)": sqrt(15/2)
        found.append(Finding("layout_damaged", "answer: a two-entry column where the question has no vectors: a fraction", True))
    for where, text in (("question", question), ("answer", answer)):
        if "\\begin{" in text:  # rebuilt matrices: their entries are laid out already
            text = re.sub(r"\\begin\{(\w+)\}.*?\\end\{\1\}", " M ", text, flags=re.S)
        if where == "answer" and _PERMUTATION_TALK.search(question):
            text = _CYCLE.sub("C", text)  # "(1 2 4 5 3)": a cycle's numbers stand side by side by right
        checks = [("control or private-use glyphs", _BAD_GLYPHS), ("a vector arrow apart from its letter", _DETACHED_ARROW),
                  ("an inverse flattened", _INVERSE), ("a power flattened", _PAREN_POWER), ("e^x flattened", _EXP_E),
                  ("an exponent left beside e", _EXP_BESIDE),
                  ("a relation sign lost", _LOST_RELATION), ("a vector flattened", _FLAT_VECTOR),
                  ("a fraction flattened", _FLAT_FRACTION), ("numbers without layout", _FLAT_NUMBERS),
                  ("a column vector flattened", _FLAT_ARGUMENT), ("double subscripts flattened", _FLAT_INDICES)]
        for what, pattern in checks:
            m = pattern.search(text)
            if m:  # a lost "=" in a question's definitions ("Let A {1, 2}") still reads; in an answer it does not compare
                sure = not (pattern is _LOST_RELATION and where == "question")
                found.append(Finding("layout_damaged", f"{where}: {what}: {m.group(0).strip()[:30]!r}", sure))
        for what, pattern in (("an exponent fraction left beside its base", _HALF_FRACTION),
                              ("a power read as a root's index", _ROOT_INDEX_GLUED),
                              ("a function name raised alone", _FUNCTION_EXPONENT),
                              ("a relation sign read as a comma", _SPACED_COMMA),
                              ("an integral sign read as Z", _INTEGRAL_Z),
                              ("a small matrix flattened", None)):
            if (m := pattern.search(text) if pattern else _small_matrix(text)) is not None:
                found.append(Finding("layout_damaged", f"{where}: {what}: {m.group(0).strip()[:30]!r}", True))
        if (bad := _malformed_markup(text)) is not None:
            found.append(Finding("layout_damaged", f"{where}: rebuilt notation malformed: {bad.strip()[:30]!r}", True))
        if (bad := _unbalanced_brackets(text)) is not None:
            found.append(Finding("layout_damaged", f"{where}: a bracket closed that was never opened: {bad.strip()[:30]!r}", True))
        if where == "answer" and (bad := _unclosed_bracket(text)) is not None:
            found.append(Finding("layout_damaged", f"answer: a bracket opened and never closed: {bad.strip()[:30]!r}", True))
        if (m := _MISPLACED_FRACTION.search(text)) is not None:  # in a question a reader may still see "J_0 r/R": unsure
            found.append(Finding("layout_damaged", f"{where}: a fraction rebuilt where none can be: {m.group(0).strip()[:30]!r}",
                                 where == "answer"))
        if (m := _IMPOSSIBLE_MARKUP.search(text)) is not None:
            found.append(Finding("layout_damaged", f"{where}: markup no author writes: {m.group(0).strip()[:30]!r}", True))
        if where == "answer" and (m := _STRAY_LETTER.search(text)) is not None \
                and not re.search(rf"(?<![A-Za-z\\]){m.group(1)}(?![A-Za-z])", question):
            found.append(Finding("layout_damaged", f"answer: a stray letter after a rebuilt formula: {m.group(0).strip()[:30]!r}", True))
        if where == "answer" and (m := _SQUARE_RADICAND.search(text) or _STRAY_TAIL.search(text)) is not None:
            found.append(Finding("layout_damaged", f"answer: a rebuilt formula with a stray number: {m.group(0).strip()[:30]!r}", True))
        if (cut := _unbalanced_script(text)) is not None:
            found.append(Finding("layout_damaged", f"{where}: an exponent closed inside its parentheses: {cut[:30]!r}", True))
        if where == "question" and (m := _GLUED_HEADING.search(text)) is not None:
            found.append(Finding("layout_damaged", f"question: another block's heading glued in: {m.group(0).strip()[:30]!r}", True))
        m = _FLAT_TERMS.search(text)
        if m:
            found.append(Finding("layout_damaged", f"{where}: a fraction flattened: {m.group(0).strip()!r}", True))
        if where == "answer":
            plain = _CYCLE.sub(" C ", text)  # cycles "(1 3 5)" are numbers side by side by right
            for what, pattern in (("numbers side by side", _ADJACENT_NUMBERS), ("starts with punctuation", _LEADING_PUNCT),
                                  ("a symbol then its value, the relation sign lost", _SYMBOL_THEN_VALUE)):
                if (m := pattern.search(plain)) is not None:
                    found.append(Finding("layout_damaged", f"answer: {what}: {m.group(0).strip()[:30]!r}", True))
        power = _flattened_powers(text)
        if power:
            found.append(Finding("layout_damaged", f"{where}: superscripts flattened: {power!r}",
                                 not (verdict and where == "question")))
        if _SUBSCRIPT_POWER.search(text):
            found.append(Finding("layout_damaged", f"{where}: a power after a subscript flattened: "
                                                   f"{_SUBSCRIPT_POWER.search(text).group(0)!r}", True))
        if where == "question" and (glued := glued_exponent(text, answer)) is not None:
            found.append(glued)
    if (restated := restated_without_relation(question, answer)) is not None:
        found.append(Finding("layout_damaged", f"answer: {restated!r} restated without its relation sign", True))
    if _CAPS_TAIL.search(question):
        found.append(Finding("layout_damaged", f"question: a running header after the question: {_CAPS_TAIL.search(question).group(0).strip()[:30]!r}", True))
    if _HEADER_TAIL.search(question):
        found.append(Finding("layout_damaged", "question: a running header after the question", True))
    return next((f for f in found if f.sure), found[0] if found else None)


# ---- checkability -----------------------------------------------------------------------------------


_VERIFY = re.compile(r"^\s*(?:verify|check|confirm|illustrate)\b(?!\s+(?:that|whether|if)\b)", re.I)


def verification(question: str) -> Finding | None:
    """"Verify Euler's Theorem for n = 15 and a = 4.": the outcome is known before the work; the
    answer is the working, nothing to compare."""
    if _VERIFY.match(question) and not _FIND.search(question) and "?" not in question:
        return Finding("not_checkable", "a verification task: its outcome is given", True)
    return None


# a value a checker can parse: a number, a formula with an operator or a relation, LaTeX math
_VALUE_TOKEN = re.compile(r"\d|\\(?:frac|binom|sqrt|begin|int|sum|pi|infty)\b|[=≡≤≥<>∈×^_]|(?<![A-Za-z])[A-Za-z]\s*\(")


def stated_value(answer: str) -> bool:
    """The answer holds something a checker could compare beside its words (a digit, a formula)."""
    return bool(_VALUE_TOKEN.search(re.sub(r"\((?:[a-z]|[ivx]+)\)", " ", answer)))  # "(a)" labels are not values


# "Yes. ...", "Non puisque ...", "Neither. ...": a verdict opens the answer, the words after justify it
_VERDICT_OPENING = re.compile(r"\s*(?:(?:yes|oui|non|ja|nein|true|false|vrai|faux)\b(?!-)|(?:no|neither|both|none)\s*[.,;:!])", re.I)


def _verdict_opening(answer: str) -> bool:
    return bool(_VERDICT_OPENING.match(answer))


# "Among a group of n people, is it possible ...?"; "Which of these are members of the span ...?\n(c) sin x": per part a yes/no
_LATE_YES_NO = re.compile(r",\s*(?:is|are|does|do|can|could|will|would|must|should)\s+(?:it|there|this|that|the|a|an)\b", re.I)
_WHICH_OF_PARTS = re.compile(r"\bwhich\s+of\s+(?:these|the\s+following)\b[^?]*\b(?:is|are)\b[^?]*\?(?:[^\n]*)\n\s*\([a-z]\)[^\n]*$", re.I)


def _asks_yes_no(question: str) -> bool:
    if _WHICH_OF_PARTS.search(question.strip()):
        return True
    return any(_YES_NO.match(x) or _YES_NO_FR.search(x) or _LATE_YES_NO.search(x) for x in _sentences(question) if x.rstrip().endswith("?"))


# a quantity with one value for the question's givens: "what is the tension", "find also its angular acceleration"
_QUANTITY = (r"(?:(?:angular|linear|average|instantaneous|terminal|initial|final|total|net|maximum|minimum)\s+)?"
             r"(?:remainder|rate|speed|velocity|acceleration|value|values|size|sizes|length|time|number|probability|distance"
             r"|mass|energy|force|tension|momentum|power|work|current|voltage|frequency|period|wavelength|pressure|final)s?\b")
# an ask with one closed answer (a count, a named quantity, the values that satisfy a condition): a
# value stated in its prose is the answer; "Give two ...", "Find a matrix such that ...", "Define ..."
# ask for one of many and are not here
_CLOSED_ASK = re.compile(
    r"\bhow\s+(?:many|much|high|far|long|fast|large|big|heavy|tall|deep|wide|often)\b"
    r"|\bat\s+what\s+(?:rate|speed|time|angle|height|distance|temperature)\b"
    r"|\bwhat\s+(?:is\s+the\s+|are\s+the\s+|will\s+(?:be\s+)?(?:the\s+|its\s+)?|would\s+(?:be\s+)?(?:the\s+)?)?" + _QUANTITY +
    r"|\bwhich\s+(?:real\s+|positive\s+|complex\s+)?(?:numbers?|values?|integers?)\b"
    r"|\b(?:find|compute|calculate|determine|evaluate)\s+(?:the\s+)?(?:derivative|\\frac\{d|dy/dx|numerical\s+values?)\b"
    r"|\b(?:find|compute|calculate|determine|evaluate)\s+(?:also\s+)?(?:the\s+|its\s+)?" + _QUANTITY +
    r"|\bcombien\b|\bquel(?:le)?s?\s+(?:est|sont|sera)\b|\btrouvez\s+(?:la|le|les)\s+(?:masse|valeur|valeurs|nombre|temps|vitesse)\b",
    re.I)
_YES_NO_FR = re.compile(r"^\s*(?:est-ce\s+que|peut-on|existe-t-il|y\s+a-t-il)\b|-(?:t-)?(?:il|elle|on)s?\b[^?]*\?\s*$", re.I)
# the answer opens with its value, the words after explain it: "215. Use PIE: ...", "\\binom{18}{4}. Each outcome ..."
_LEAD_VALUE = re.compile(r"\s*(?:[−-]?\d[\d,]*(?:\.\d+)?|\\(?:frac|binom|sqrt)\{[^{}]*\}(?:\{[^{}]*\})?)\s*[.;]\s+[A-Z]")
# the answer picks one of many or only points the way: its value is not the answer
_ONE_OF_MANY = re.compile(r"\bwe\s+(?:could|can|may)\s+(?:take|choose|pick|use)\b|\bhere\s+(?:are|is)\s+(?:one|two|some|an?)\b"
                          r"|\bone\s+(?:such|possible|example)\b|\bfor\s+(?:example|instance)\b|\be\.g\.|\bor\s+[A-Za-z]\s*=", re.I)


def checkability(answer: str, answer_type: str | None, max_words: int, question: str | None = None) -> Finding | None:
    """A text answer the checker compares as text: short names and verdicts only."""
    if answer_type != "text":
        return None
    words = re.findall(r"[A-Za-z]{2,}", answer)
    if len(words) > max_words:
        # prose that carries a value ("3^n, since there are 3 choices ...", "... has roots x = 16 and
        # x = 4.", "At the rate of \\frac{8}{r} square feet per second.") may state the answer among its
        # words: no rule can tell, a judge can; prose with no value and no verdict states nothing to compare
        one_of_many = _ONE_OF_MANY.search(answer) and not _LEAD_VALUE.match(answer)  # "215. Use PIE ..., for example, ...": the lead is the answer
        if len(words) <= 4 * max_words and question is not None and not one_of_many and (
                stated_value(answer) and _CLOSED_ASK.search(question) or _verdict_opening(answer) and _asks_yes_no(question)):
            return Finding("not_checkable", f"a prose answer of {len(words)} words that states a value", False, judge=True)
        return Finding("not_checkable", f"a prose answer of {len(words)} words", True)
    if len(words) > max_words // 2:  # a sentence with no verdict and no value ("If you are American, then ...") states nothing to compare
        from .qtype import verdict_value

        bare_prose = len(words) >= 6 and verdict_value(answer) is None and not stated_value(answer)  # a formula is a value too
        return Finding("not_checkable", f"a prose answer of {len(words)} words" + (", no value or verdict" if bare_prose else ""), bare_prose)
    return None


def computed_mismatch(question: str, answer: str) -> Finding | None:
    """The gold fails a check a computer algebra system can make (answer_consistency): the derivative
    of the printed function, the initial value of an explicit solution, the differential equation
    it should satisfy, boundary conditions of a function of two variables, an implicit general solution,
    a chain of numbers in the working that does not hold, an antiderivative whose derivative is not the
    integrand, a maximum or minimum that the second-derivative test contradicts."""
    from .answer_consistency import (
        boundary_mismatch,
        chain_mismatch,
        derivative_mismatch,
        extremum_mismatch,
        implicit_mismatch,
        initial_value_mismatch,
        integral_mismatch,
        ode_mismatch,
    )

    why = (derivative_mismatch(question, answer) or initial_value_mismatch(question, answer) or ode_mismatch(question, answer)
           or boundary_mismatch(question, answer) or implicit_mismatch(question, answer) or chain_mismatch(answer)
           or integral_mismatch(question, answer) or extremum_mismatch(question, answer))
    return Finding("answer_mismatch", why, True) if why else None


def computed_answer(question: str, answer: str) -> Finding | None:
    """The answer a computer algebra system computes from the question as printed (compute: a derivative,
    an antiderivative, a generating function's sequence, a recurrence, a progression's sum, an expanded sum, a power mod n,
    a congruence, an order in Z_n, a complex number, a determinant, a matrix product ...) differs from
    the gold: sure when question and gold parsed cleanly, else a doubt."""
    from .compute import compute

    c = compute(question, answer)
    if c is None or c.agrees:
        return None
    return Finding("answer_mismatch", f"computed ({c.kind}): {c.detail}"[:300], c.sure)


def mark_verified(record: Record) -> Record:
    """A kept record whose gold the computer algebra system computed too: tagged `cas_verified`, the
    computed value in its meta (`cas`)."""
    import json

    if record.get("answer_type") in ("boolean", "choice", "proof"):
        return record
    from rlclimb.environments.vector_sets import vector_set

    from .compute import checked_in_full, compute

    c = compute(record.get("question") or "", (record.get("answer") or "").strip())
    if c is None or not c.agrees:
        return record
    meta = json.loads(record.get("meta") or "{}")
    meta["cas"] = {"kind": c.kind, "value": c.value[:300]}
    record["meta"] = json.dumps(meta, sort_keys=True)
    if len(record["answer"].split()) > 8 and vector_set(record["answer"]) is None \
            and checked_in_full(record.get("question") or "", record["answer"].strip()):
        add_tag(record, "needs_judge")  # prose around checked claims: a judge compares, not the answer checker
    return add_tag(record, "cas_verified")


def findings(record: Record, max_text_words: int = 8) -> list[Finding]:
    import json

    from .compute import checked_in_full

    q, a = record.get("question") or "", (record.get("answer") or "").strip()
    meta = json.loads(record.get("meta") or "{}")
    number = str((record.get("source") or {}).get("number") or "") or None
    out = [hint_answer(a), part_mismatch(q, a, meta.get("part")), next_exercise(a, number), elsewhere(q)]
    if record.get("answer_type") not in ("boolean", "choice", "proof"):
        out += [other_quantity(q, a), restated_other(q, a), set_answer_mismatch(q, a), foreign_variable(q, a), wrong_kind(q, a),
                other_dimension(q, a), open_ended(q, a), verification(q)]
        if "statement_answer" not in (record.get("tags") or []):  # a statement or a verdict in words: a judge grades it
            out += [in_words(q, record.get("answer_type")), partial_answer(q, a, record.get("answer_type"))]
            # (verifiable kept a verdict-led answer for a judge; a gold whose every claim the CAS checked is checkable)
            if "long_form_answer" not in (record.get("tags") or []) and not checked_in_full(q, a):
                out.append(checkability(a, record.get("answer_type"), max_text_words, q))
    out.append(layout_damage(q, a, record.get("answer_type") == "boolean"))  # last: what the answer is matters more
    if record.get("answer_type") not in ("boolean", "choice", "proof"):
        out.append(computed_mismatch(q, a))  # after the damage it often explains
        out.append(computed_answer(q, a))
    return [f for f in out if f is not None]


# ---- the stage ----------------------------------------------------------------------------------------

Reason = Literal["ok", "hint_answer", "part_mismatch", "partial_answer", "open_ended", "layout_damaged",
                 "not_checkable", "reference_answer", "answer_mismatch", "no_task", "needs_context"]


class UsabilityConfig(CurateConfig):
    on_sure: Action = "drop"
    on_unsure: Action = "tag"  # tag `maybe_<reason>`; the LLM path decides these
    max_text_words: int = 8  # a text answer longer than this is prose the checker cannot compare
    prompt: str = "usability.v3.txt"  # in stages/data/prompts/ (v1, v2 kept: a run configured with one reproduces)


class UsabilityReply(BaseModel):
    usable: bool
    reason: Reason
    evidence: str = ""


def load_prompt(name: str) -> str:
    return (resources.files("rlclimb.stages") / "data" / "prompts" / name).read_text()


class UsabilityStage(CurateStage):
    name = "usability"
    version = "27"  # v27: a radical or fraction holding only brackets around nothing is malformed (layout_damaged); v26: a gold whose every claim the CAS checked (compute.checked_in_full) is checkable, judged; v25: no earlier_givens finding (part_context gives such a part its earlier parts) (earlier versions: DESIGN.md's rounds)
    Config = UsabilityConfig

    def embedded(self, record: Record, ctx: StageContext) -> Record | Drop:
        found = findings(record, self.config.max_text_words)
        for f in found:
            if f.sure:
                return flag(record, self.config.on_sure, f.reason, f.detail)
        if len({f.reason for f in found}) >= 2:  # independent doubts add up
            return flag(record, self.config.on_sure, found[0].reason, "; ".join(f.detail for f in found))
        for f in found:
            result = flag(record, self.config.on_unsure, f"maybe_{f.reason}", f.detail)
            if isinstance(result, Drop):
                return Drop(f.reason, f.detail)
            if f.judge:  # prose holding a value, a drawing beside values: only a judge grades it (train skips these)
                add_tag(record, "needs_judge")
        return mark_verified(trim_solution(record))

    async def llm(self, record: Record, ctx: StageContext):
        found = findings(record, self.config.max_text_words)
        sure = next((f for f in found if f.sure), None)
        if sure is not None:  # rules that are sure need no model
            return flag(record, self.config.on_sure, sure.reason, sure.detail)
        if len({f.reason for f in found}) >= 2:
            return flag(record, self.config.on_sure, found[0].reason, "; ".join(f.detail for f in found))
        if not found:
            return mark_verified(trim_solution(record))
        prompt = Template(load_prompt(self.config.prompt)).safe_substitute(  # $-fields: questions are full of braces
            question=record["question"], answer=record["answer"],
            concerns="; ".join(f"{f.reason}: {f.detail}" for f in found))
        reply, completion = await self.ask(ctx, prompt, UsabilityReply)
        if not reply.usable:
            reason = reply.reason if reply.reason != "ok" else found[0].reason
            return Drop(reason, f"model: {reply.evidence[:200]}", model=completion.model, cost=completion.cost)
        return kept(mark_verified(trim_solution(record)), completion, reason="model: usable")

