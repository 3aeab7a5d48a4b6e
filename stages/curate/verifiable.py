"""Verifiable: does the item have a final answer that a checker can compare against?

Drops (reason): `no_answer` (empty or a placeholder: "n/a", "?", "TBD"), `answer_varies`
("answers may vary", "open-ended"), `answer_is_reference` ("see the solution manual", "left to
the reader"), `open_discussion` (discuss / explain / describe questions with a prose answer),
`proof_without_conclusion` (a proof whose claim has no checkable value: it cannot be converted),
`no_boolean_answer` (true/false without one), `long_form_answer` (prose with no final answer).
A long answer that states a final one ("... so the answer is \\boxed{12}") keeps the final answer
and moves the full text to `solution` (when that is empty); so does a value followed by its
explanation ("20^4 (order matters ...)"), and so does a worked solution that states its value in its
last sentence ("Thus she has 15\\binom{14}{5} choices", "giving det(A) = ...": worked.py; tagged
`final_from_working`), also where the stem reads as a proof but its ask wants a value. A statement
the stem asks for (a negation, an "if ..., then ..." rewrite) and a verdict in words ("f is not
injective. To prove this ...") are kept as text tagged `statement_answer` and `needs_judge`. Sets
`answer_type`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from rlclimb.environments.answer_check import (
    HEDGE,
    boolean_value,
    choice_index,
    choice_indices,
    extract_final_answer,
    infer_answer_type,
)
from rlclimb.pipelines.stage import Drop, Record, StageContext

from ..text_keys import canonical_text
from .common import CurateConfig, CurateStage, kept
from .compute import checked_in_full
from .compute.systems import system_final
from .convert import proof_claim
from .qtype import verdict_value
from .worked import clean_value, worked_final

_PLACEHOLDER = {"", "n/a", "na", "none given", "tbd", "todo", "?", "??", "-", "--", "...", "null", "nan", "unknown",
                "no answer", "answer", "blank", "x", "xxx"}
_VARIES = re.compile(
    r"\banswers?\s+(?:may|will|can|might|could)\s+vary\b|\bvaries\b|\bvarious\s+(?:answers|possible)|\bopen[- ]ended\b"
    r"|\bdepends\s+on\s+(?:the\s+)?(?:student|reader|individual|context|interpretation)|\bstudents?'?\s+(?:answers|responses)\s+"
    r"|\bsubjective\b|\bno\s+(?:single|one|unique)\s+(?:correct\s+)?answer\b|\bmany\s+(?:possible\s+)?(?:correct\s+)?answers\b"
    r"|\bsample\s+answer\b|\bwill\s+differ\b",
    re.I,
)
_REFERENCE = re.compile(
    r"^\s*(?:see|refer\s+to|check|consult|look\s+at)\b.{0,60}\b(?:solution|text|page|book|key|manual|below|above|figure|appendix|notes|chapter|section|website"
    r"|theorem|lemma|proposition|corollary|example|exercise|remark|equation|definition)\b"
    r"|\b(?:solution|answer|proof)\s+(?:is\s+)?(?:omitted|not\s+(?:given|provided|shown)|in\s+the\s+(?:text|book|manual))\b"
    r"|\bleft\s+(?:as\s+an\s+exercise\s+)?(?:to|for)\s+the\s+(?:reader|student)\b|^\s*omitted\.?\s*$|^\s*see\s+(?:above|below)\.?\s*$",
    re.I,
)
_DISCUSSION = re.compile(
    r"^\s*(?:discuss|describe|explain|why\b|what\s+do\s+you\s+think|compare\s+and\s+contrast|in\s+your\s+own\s+words"
    r"|write\s+(?:an?\s+)?(?:short\s+)?(?:essay|paragraph|report|summary)|reflect|comment\s+on|summari[sz]e|elaborate|outline"
    r"|how\s+(?:would|might|could)\s+you|what\s+are\s+(?:some|the\s+(?:advantages|disadvantages|benefits|implications))"
    r"|give\s+(?:an?\s+)?(?:example|reasons?|arguments?)|suggest|critically|evaluate\s+the\s+(?:claim|argument|statement))",
    re.I,
)
_SUBJECTIVE = re.compile(r"\byour\s+(?:favou?rite|opinion|view|preference|feelings?)\b|\bdo\s+you\s+(?:think|prefer|like|believe|feel)\b"
                         r"|\bin\s+your\s+opinion\b", re.I)
_MATHY = re.compile(r"[\d=\\^$]")
# "Give an example ..., or explain why no such example is possible." answered "This is not possible, ...":
# the verdict is the checkable answer (an example, the other outcome, is not: the usability stage)
_OR_IMPOSSIBLE = re.compile(r"\b(?:or|else)\s+(?:explain|show|prove|say)\s+why\s+(?:no\s+such|this\s+is\s+not|it\s+is\s+not)"
                            r"|\bor\s+show\s+that\s+no\s+(?:such\s+)?example", re.I)
_IMPOSSIBLE = re.compile(r"^\W*(?:this|that|it|such\s+an?\s+\w+)\s+is\s+(?:not|im)\s*possible\b", re.I)


# A yes/no or true/false ask ("Does v lie in span(a_1, a_2)?", "Is the statement true or false? Prove
# your answer.") answered with its verdict first and the reasoning after: the verdict is the answer.
_YES_NO_ASK = re.compile(r"(?:^|[.?!:]\s+|\n|\|\s*|\([a-z]\)\s*|(?<=[\w)\]}])\s*,\s+)(?:is|are|does|do|can|could|must|will|would|has|have|should|was|were)\b[^?]*\?"
                         r"|\btrue\s+or\s+false\b|\b(?:vrai|faux)\s+ou\s+(?:vrai|faux)\b", re.I)
# The same ask as an instruction ("Decide if the vector is in the column space.", "Déterminez si ..."),
# when nothing else is asked: "Determine whether it converges and find its sum" wants more than a verdict
_DECIDE_ASK = re.compile(r"\b(?:decide|determine|check|tell|state|say|verify)\s+(?:if|whether)\b"
                         r"|\b(?:décidez|déterminez|dites|vérifiez)\s+si\b", re.I)
_OTHER_ASK = re.compile(r"\b(?:find|compute|calculate|give|list|describe|explain|justify|prove|show|what|which|how"
                        r"|why|trouvez|calculez|donnez|expliquez|montrez|quel(?:le)?s?)\b|\bif\s+so\b|\?", re.I)
_VERDICT_FIRST = re.compile(r"^\W*(yes|no|true|false|oui|non|vrai|faux|always|sometimes|never|not\s+necessarily|not\s+always)\b"
                            r"\s*[,;:.!\u2014-]\s*\S", re.I)
# "Sometimes. Clearly [S ∩ T] ⊆ [S] ∩ [T] ...", "Not necessarily. For instance, ...": a qualified
# verdict to a yes/no ask; a judge compares it ("not necessarily" is a "no" to "must ...?")
_QUALIFIED = {"always", "sometimes", "never", "not necessarily", "not always"}
# One value with its unit in a sentence ("The egg was thrown an initial height of 2.75 m above the
# ground", "so there are 120 ways"): for a one-quantity ask, that value is the final answer.
_QUANTITY_ASK = re.compile(r"\bhow\s+(?:many|much|high|far|long|fast|large|big|heavy|tall|deep|wide|often)\b"
                           r"|\b(?:find|compute|calculate|determine|what\s+is|what\s+was|what\s+will)\s+(?:the\s+)?(?:number|value|height|distance|speed|time|mass|energy|force|probability|total|area|volume|length|temperature|amount|rate)\b", re.I)
_PROSE_NUMBER = re.compile(r"(?<![\w.,^_{}/−-])(\d+(?:[.,]\d+)?(?:\s*(?:×|x)\s*10\^\{?[−-]?\d+\}?)?)"
                           r"(\s*(?:%|°[CF]?|(?:k|m|c|M|G|μ|n)?(?:m|g|s|J|N|W|V|A|Hz|Pa|L|K|eV|rad)(?:/s(?:\^2)?)?|m/s(?:\^2)?)(?![A-Za-z]))?")


def prose_final(question: str, answer: str) -> str | None:
    """The final answer a prose answer states though it marks none: the verdict it opens with, for a
    yes/no ask; the one value (with its unit) it gives, for a one-quantity ask. None when unsure:
    several asks, several values, or a formula in the prose."""
    asks = [x for x in re.split(r"(?<=[.?!])\s+|\n+", question) if x.rstrip().endswith("?") or _QUANTITY_ASK.search(x)]
    if len(asks) > 1:
        return None
    if (m := _VERDICT_FIRST.match(answer)) and (_YES_NO_ASK.search(question)
                                                 or _DECIDE_ASK.search(question) and not _OTHER_ASK.search(question)):
        word = re.sub(r"\s+", " ", m.group(1).lower())
        return {"oui": "Yes", "non": "No", "vrai": "True", "faux": "False"}.get(word, word.capitalize())
    if not _QUANTITY_ASK.search(question) or re.search(r"[=+^\\<>≤≥]|\d[a-z]\b", answer):
        return None
    values = [m for m in _PROSE_NUMBER.finditer(answer) if not re.search(rf"(?<![\d.,]){re.escape(m.group(1))}(?![\d.,])", question)]
    if len(values) != 1 or len(_PROSE_NUMBER.findall(answer)) > 2:
        return None
    return (values[0].group(1) + (values[0].group(2) or "")).strip()


# "Yes. Consider H = ...", "Oui une solution existe. Car ...": a long answer that opens with its verdict
# "Technically, no. Subspaces of R^3 are ...": a hedge before the verdict
_VERDICT_LEAD = re.compile(r"^\W*" + HEDGE +
                           r"(?:yes|no|oui|non|vrai|faux|true|false|ja|nein)\b(?!-)", re.I)
_YES_NO_SENTENCE = re.compile(r"^\s*(?:\([a-z]\)\s*)?(?:is|are|does|do|can|could|must|will|would|has|have|should|was|were"
                              r"|est-ce\s+que|peut-on|existe-t-il|y\s+a-t-il)\b|-t-(?:il|elle|on)\b|-(?:il|elle|on)s?\b", re.I)
_IMPERATIVE = re.compile(r"^\s*(?:\([a-z]\)\s*)?(?:find|compute|calculate|give|list|prove|show|describe|sketch|draw|write|state"
                         r"|produce|construct|determine(?!\s+(?:whether|if)))\b", re.I)
_DERIVE_VALUE = re.compile(r"\b(?:derive|obtain|find)\s+(?:a|an|the)\s+(?:general\s+|closed\s+|explicit\s+)?(?:formula|expression)\s+for\b", re.I)
_DECIDE = re.compile(r"^\s*(?:decide|determine)\s+(?:whether|if)\b", re.I)
_WHY_SENTENCE = re.compile(r"^\s*(?:why|pourquoi|explain|justify|expliquez|justifiez)\b", re.I)


def verdict_led(question: str, answer: str) -> bool:
    """Every ask of the question is a yes/no one (a "why?" after it asks for the reasons) and the
    answer opens with yes or no: the verdict is there, the rest argues it. A rule cannot tell whether
    the reasons answer a second ask, so the caller keeps the item for a judge instead of dropping it."""
    if not _VERDICT_LEAD.match(answer) and verdict_value(answer) is None:  # "Yes, ...", "The statement is true. ..."
        return False
    # a part asks its own question: "How does the inverse interact with ...?\n(b) Is (H + G)^{−1} = ...?"
    item = question.strip().split("\n")[-1]
    if re.match(r"\s*\((?:[a-z]|[ivx]+)\)", item) and "?" in item:
        question = item
    sentences = [x.strip() for x in re.split(r"(?<=[.?!])\s+|\n+", re.sub(r"\([^()]{8,}\)", "", question))]
    if any(_IMPERATIVE.match(x) for x in sentences):
        return False  # "... Find its inverse.": an ask the verdict does not answer
    # "Decide whether each map is an isomorphism (if it is ..., prove it ...). (a) f: ...": a yes/no ask too
    asks = [x for x in sentences if x.rstrip().endswith("?") or _DECIDE.match(x)]
    return bool(asks) and any(_YES_NO_SENTENCE.search(x) or _DECIDE.match(x) for x in asks) \
        and all(_YES_NO_SENTENCE.search(x) or _DECIDE.match(x) or _WHY_SENTENCE.match(x) for x in asks)


# "would it gain altitude at a higher or at a lower rate ...?": an ask between two alternatives
_ALTERNATIVES = re.compile(r"\b(\w+er|more|less|increas\w*|decreas\w*|positive|negative|same|different|inside|outside)\s+(?:or|ou)\s+"
                           r"(?:at\s+a\s+|an?\s+|the\s+)?(\w+er|more|less|increas\w*|decreas\w*|positive|negative|same|different"
                           r"|inside|outside)\b[^?]*\?", re.I)


def alternative_named(question: str, answer: str) -> bool:
    """The question asks which of two alternatives holds and the answer names one of them, not the
    other: that is its verdict, the rest argues it (a judge confirms)."""
    m = _ALTERNATIVES.search(question)
    if m is None or m.group(1).casefold()[:5] == m.group(2).casefold()[:5]:
        return False
    said = [bool(re.search(rf"\b{re.escape(w.casefold()[:5])}", answer.casefold())) for w in (m.group(1), m.group(2))]
    return said.count(True) == 1


def _words(text: str) -> int:
    return len(re.findall(r"[A-Za-z]{2,}", text))


# The stem asks for a statement: a negation, converse or contrapositive, an "if ..., then ..."
# rewrite, what follows from premises. The answer is a sentence or a few, right or wrong against the
# ask: no rule compares two of them, a judge does (tagged so: `statement_answer`, `needs_judge`).
_STATEMENT_ASK = re.compile(
    r"\b(?:write|state|give|find|form)\s+(?:down\s+)?(?:the\s+|its\s+)?(?:negations?|converses?|contrapositives?)\b"
    r"|\b(?:negate|the\s+negation\s+of)\b|\bin\s+the\s+form\s*,?\s*[“\"'‘]?\s*if\b"
    r"|\bwhat\s+(?:can|could|may|might)\s+(?:you|we|one)\s+(?:conclude|deduce|infer)\b"
    r"|\bcan\s+(?:you|we|one)\s+(?:conclude|deduce|infer)\s+anything\b", re.I)
_ARGUES = re.compile(r"\b(?:to\s+(?:prove|see|show)\s+this|proof|suppose|assume|therefore|hence)\b|\bwe\s+(?:must|need|have|see|get|can)\b", re.I)
_JUDGE_TAGS = ["statement_answer", "needs_judge"]


def statement_answer(question: str, answer: str) -> bool:
    """The stem asks for a statement and the answer is one (or a few): short prose, no argument."""
    return (bool(_STATEMENT_ASK.search(question)) and 0 < _words(answer) <= 60 and not _ARGUES.search(answer)
            and not re.search(r"(?:(?<![\w])[A-Z]\s+){5,}", answer))  # "P Q ... T T F T F F": a truth table flattened


# "(d) State the converse of the statement. Is it true? Explain." answered "For all integers n, if
# ... then .... This is false. n = −3 is a counter-example": the statement asked, then its verdict
_VERDICT_SENTENCE = re.compile(r"(?:^|[.;]\s+)(?:this|it|that|the\s+(?:converse|negation|contrapositive|statement))\s+is\s+"
                               r"(?:also\s+)?(?:true|false)\b", re.I)


_PROVE_OR_DISPROVE = re.compile(r"\bprove\s+or\s+disprove\b|\bdisprove\b", re.I)
# the opening sentence settles the claim: "The converse is false.", "False; ...", "There is a nonabelian group of order 6."
_SETTLES = re.compile(r"^\W*(?:(?:the\s+(?:converse|statement|claim|inverse|contrapositive|assertion)|this|it)\s+is\s+(?:not\s+)?(?:true|false)"
                      r"|(?:true|false)\b|there\s+(?:is|exists)\s+(?:a|an|no)\b)", re.I)


def disproof_verdict(question: str, answer: str) -> bool:
    """A "prove or disprove" ask whose answer opens by settling the claim (true, false, or the
    counterexample that exists): that verdict is what is checked; the rest argues it."""
    return bool(_PROVE_OR_DISPROVE.search(question)) and bool(_SETTLES.match(answer))


def statement_then_verdict(question: str, answer: str) -> bool:
    m = _VERDICT_SENTENCE.search(answer)
    return (bool(_STATEMENT_ASK.search(question)) and m is not None and m.start() > 0
            and statement_answer(question, answer[:m.start()] + "."))


# "Is f injective? Prove your answer." answered "f is not injective. To prove this, ...", "Determine if
# the rule is valid" answered "The rule is valid. To see this, ...": the first sentence states the
# verdict in the ask's own terms (with or without "not", "in-", "non-"), the rest argues it.
_JUSTIFY = re.compile(r"\s*(?:to\s+(?:prove|see|show|check)\s+(?:this|that|it)|indeed|since|because|this\s+is\s+because|for\s+example"
                      r"|in\s+fact|proof|note|consider|suppose|let|by|we|make|look|here|if|any|there)\b", re.I)
_ASK_WORDS = {"decide", "determine", "whether", "following", "prove", "answer", "explain", "justify", "show", "your", "which",
              "that", "this", "these", "those", "with", "from", "they", "them", "each", "statement", "statements", "true",
              "false", "check", "tell", "does", "have", "there", "what", "where", "when", "contain", "contains"}
_MORE_ASKED = re.compile(r"\b(?:describe|find|compute|calculate|list|give|evaluate|if\s+so|if\s+(?:it|the\s+\w+)\s+is)\b", re.I)
_CLAIM_VERB = re.compile(r"\b(?:is|are|has|have|does|do|can|cannot|contains?|holds?|exists?)\b", re.I)


def _terms(text: str) -> set[str]:
    return {w.casefold() for w in re.findall(r"[A-Za-z]{4,}", re.sub(r"\\[A-Za-z]+", " ", text))} - _ASK_WORDS


def verdict_sentence(question: str, answer: str) -> str | None:
    """The verdict an answer opens with in words, for a yes/no or decide ask: its first sentence,
    when it names what the ask asks about and the rest (if any) justifies it. None when unsure."""
    if not (_YES_NO_ASK.search(question) or _DECIDE_ASK.search(question)
            or re.search(r"(?:^|[.?!]\s+|\n)(?:for\s+|in\s+|of\s+)?which\b[^.?]*\?", question, re.I)):  # "Which graphs ...?", not "the n for which ..."
        return None
    if _MORE_ASKED.search(question):  # "Determine whether ... If it is, describe the partition": more than a verdict
        return None
    m = re.match(r"(.*?[^.\s]{2})\.(?:\s+(?=[A-Z])|\s*$)", answer, re.S)
    first, rest = (m.group(1), answer[m.end():]) if m else (answer.rstrip(" ."), "")
    if re.match(r"\s*(?:we|let|suppose|assume|consider|note|since|because|if)\b", first, re.I):
        return None  # "We prove that ...": an argument, not a verdict
    said_all = {w[:6] for w in _terms(answer)}
    for ask in re.findall(r"[^.?!\n]*\?", question):  # "How many edges ...? ... how many faces ...?": each ask answered
        if _terms(ask) and not {w[:6] for w in _terms(ask)} & said_all:
            return None
    if _words(first) > 16 or _words(first) < 2 or not _CLAIM_VERB.search(first) or re.search(r"[=<>≤≥]", first):
        return None
    if rest.strip() and not _JUSTIFY.match(rest):
        return None
    if not rest.strip() and _words(first) > 12:
        return None
    asked = {w[:6] for w in _terms(question)}
    said = {w.removeprefix("non").removeprefix("in")[:6] for w in _terms(first)} | {w[:6] for w in _terms(first)}
    stems = {w.removeprefix("non").removeprefix("in")[:6] for w in _terms(question)} | asked
    return first.strip() if len(said & stems) >= (1 if rest.strip() else 2) else None


# "4^4 · 2 (choose any digits ...)", "20^4 (order matters ...)": a value, then why in brackets;
# "2.01 × 10^9 solar masses, assuming the gas ...": a value and unit, then an assumption clause;
# "3 1 = 3. We need to select ...": a computation to its value, then prose. The value is the answer.
# "42 (the number of subgroups)": a word in the brackets, not a factor "16(i − \\sqrt{3} )" (a LaTeX command is no word)
_VALUE_THEN_WHY = re.compile(r"^\s*(?P<v>[^A-Za-z()]*\d[^A-Za-z()]*?)\s*\((?P<why>[^()]*(?<![\\A-Za-z])[A-Za-z]{3,}[^()]*)\)\s*\.?\s*$")
_VALUE_THEN_CLAUSE = re.compile(r"^\s*(?P<v>[−-]?\d[\d.,]*(?:\s*(?:×|x)\s*10\^\{?[−-]?\d+\}?)?(?:\s+[A-Za-z]+){0,2})\s*,\s*"
                                r"(?:assuming|provided|if|where|given|neglecting|ignoring|since|because)\b", re.I)
_CHAIN_THEN_PROSE = re.compile(r"^\s*(?P<chain>[^A-Za-z.]*\d[^A-Za-z]*?=\s*(?P<v>[−-]?\d[\d,]*(?:\.\d+)?))\s*\.\s+(?=[A-Z])")


# "Gaussian reduction ... shows that y = 1/2 and x = 2 is the unique solution": the working names
# its solution in words; the assignments are the final answer
_STATED_SOLUTION = re.compile(r"\b(?:shows?|gives?|so|thus|hence)\s+(?:that\s+)?(?P<v>[^.;:]{1,60}?=[^.;:]{1,60}?)\s+(?:is|are)\s+the\s+"
                              r"(?:unique\s+|only\s+)?solutions?\b", re.I)


def explained_value(answer: str) -> str | None:
    if (m := _STATED_SOLUTION.search(answer)) is not None and not re.search(r"[A-Za-z]{3,}", m.group("v").replace(" and ", " ")):
        return m.group("v").strip()
    for pattern in (_VALUE_THEN_WHY, _VALUE_THEN_CLAUSE, _CHAIN_THEN_PROSE):
        if (m := pattern.match(answer)) is not None:
            value = m.group("v").strip(" .,;")
            number = re.sub(r"(?:\s+[A-Za-z]+)+$", "", value)  # "2.01 × 10^9 solar masses": the unit is the checker's business
            if number and infer_answer_type(number) in ("numeric", "expression"):
                return value
    return None


def _subjective_ask(question: str) -> bool:
    """A subjective word in an ask ("What is your favorite ...?"), not in a problem's story ("Conic,
    your favorite drive-in, offers 20 flavors. How many ...?")."""
    for sentence in re.split(r"(?<=[.?!])\s+|\n+|\s/\s", question):
        if _SUBJECTIVE.search(sentence) and (sentence.rstrip().endswith("?") or re.match(
                r"\s*(?:\([a-z]\)\s*)?(?:what|which|describe|name|tell|explain|give|list|choose|pick|discuss)\b", sentence, re.I)) \
                and not _QUANTITY_ASK.search(sentence):
            return True
    return False


class VerifiableConfig(CurateConfig):
    max_answer_words: int = 25  # a prose answer longer than this needs a stated final answer
    extract_final: bool = True  # take "\\boxed{...}" / "the answer is ..." out of a long answer


Reason = Literal["ok", "no_answer", "answer_varies", "answer_is_reference", "open_discussion",
                 "proof_without_conclusion", "long_form_answer"]


class VerifiableReply(BaseModel):
    verifiable: bool
    reason: Reason
    final_answer: str | None = None


PROMPT = """Decide whether this question-answer pair can be used to grade a student automatically: \
it must have one final answer (a number, expression, set, choice, yes/no, or a short name or term) \
that another answer can be compared with. Not verifiable: no real answer (reason "no_answer"), \
answers that vary by person ("answer_varies"), an answer that only points elsewhere \
("answer_is_reference"), open discussion or essay questions ("open_discussion"), proofs whose claim \
has no value to check ("proof_without_conclusion"), long prose without a final answer \
("long_form_answer"). If verifiable, reason is "ok" and final_answer is the short final answer \
copied from the given answer.

Question:
{question}

Answer:
{answer}

Reply with JSON: {{"verifiable": true/false, "reason": "...", "final_answer": "..." or null}}"""


class VerifiableStage(CurateStage):
    name = "verifiable"
    version = "20"  # v20: a solved linear system's checked claim as its final (a longer answer whose claims a CAS all checked: kept for a judge); v19: worked finals of short answers too (and of an asked symbol), "derive a formula for" answered by the formula, "The statement is true." leads a verdict (earlier versions: DESIGN.md's rounds)
    Config = VerifiableConfig

    def embedded(self, record: Record, ctx: StageContext) -> Record | Drop:
        q, a, qtype = record["question"], (record.get("answer") or "").strip(), record.get("question_type")
        if a.casefold().strip(" .") in _PLACEHOLDER:
            return Drop("no_answer", f"answer is {a!r}")
        if _REFERENCE.search(a):
            return Drop("answer_is_reference", a[:120])
        if _VARIES.search(a) and (_words(a) > 3 or not _MATHY.search(a)):
            return Drop("answer_varies", a[:120])
        if "multi_part" in (record.get("tags") or []) and qtype != "multiple_choice":
            # one answer per part: the checker compares one final answer (splitting parts: future work)
            return Drop("multi_part", "an exercise in parts (a), (b), ... answered part by part")
        if qtype == "proof":
            if proof_claim(q) is None:
                if self.config.extract_final and (final := worked_final(q, a)) is not None:
                    # "(a) Produce a matrix ...", "Expand ... to derive the formula": the proof
                    # reading came from the stem's other sentences; the ask wants the value it states
                    record = self._use_final(record, final, worked=True)
                    record["question_type"] = "open"
                    record["answer_type"] = infer_answer_type(final, question_type="open")
                    return record
                if _DERIVE_VALUE.search(q) and _words(a) <= 3 and (final := clean_value(a, q)) is not None:
                    # "Derive a formula for its moment of inertia ..." answered "\\frac{3}{10}MR^2": a value asked, the value given
                    record["question_type"] = "open"
                    record["answer_type"] = infer_answer_type(final, question_type="open")
                    return record
                if disproof_verdict(q, a):  # "Prove or disprove ..." answered "The converse is false. ...": a judge grades it
                    record["answer_type"] = "text"
                    record["tags"] = sorted({*(record.get("tags") or []), *_JUDGE_TAGS})
                    return record
                return Drop("proof_without_conclusion", "the claim has no value or closed form to check")
            record["answer_type"] = "proof"
            return record
        if qtype == "true_false" and boolean_value(a) is None:
            if statement_then_verdict(q, a):
                record["answer_type"] = "text"
                record["tags"] = sorted({*(record.get("tags") or []), *_JUDGE_TAGS})
                return record
            return Drop("no_boolean_answer", f"a true/false question answered {a[:60]!r}")
        if qtype == "multiple_choice" and choice_index(a, record.get("choices") or []) is None \
                and choice_indices(a, record.get("choices") or []) is None:
            return Drop("choice_answer_unresolved", f"answer {a[:60]!r} names none of the options")
        if qtype in ("multiple_choice", "true_false"):
            record["answer_type"] = infer_answer_type(a, choices=record.get("choices") or [], question_type=qtype)
            return record
        if _OR_IMPOSSIBLE.search(q) and _IMPOSSIBLE.match(a):
            record = self._use_final(record, "Not possible")
            record["answer_type"] = "text"
            return record
        if _subjective_ask(q) or _DISCUSSION.match(q) and _words(a) > 8:
            return Drop("open_discussion", "a discussion question with a prose answer")
        if statement_answer(q, a):
            record["answer_type"] = "text"
            record["tags"] = sorted({*(record.get("tags") or []), *_JUDGE_TAGS})
            return record
        if (value := explained_value(a)) is not None:
            record = self._use_final(record, value)
        elif _words(a) > 3 and extract_final_answer(a) is None and (verdict := verdict_sentence(q, a)) is not None:
            record = self._use_final(record, verdict) if verdict != a.strip() else record
            record["answer_type"] = "text"
            record["tags"] = sorted({*(record.get("tags") or []), *_JUDGE_TAGS})
            return record
        if self.config.extract_final and _words(a) > 3:  # a worked solution that states its final answer
            final = extract_final_answer(a) if _words(a) > 6 else None
            if (system := system_final(q, a)) is not None:  # a solved linear system: the claim the system confirms
                record = self._use_final(record, system)  # (a solution set: answer_check compares vector sets)
            elif final and len(final) < len(a) / 2:
                record = self._use_final(record, final)
            elif (final := prose_final(q, a)) is not None:
                record = self._use_final(record, final)
                if final.lower() in _QUALIFIED:
                    record["tags"] = sorted({*(record.get("tags") or []), "needs_judge"})
            elif (final := worked_final(q, a)) is not None:  # short workings too ("Solving for A gives ...")
                record = self._use_final(record, final, worked=True)
        if _words(record["answer"]) > self.config.max_answer_words:
            # a verdict, then its reasons; or an answer whose every claim a computer algebra system checked (a
            # system's solutions with the particular solution the question also asks for): graded by a judge
            if verdict_led(q, a) or alternative_named(q, a) or checked_in_full(q, a):
                record["answer_type"] = "text"
                record["tags"] = sorted({*(record.get("tags") or []), "needs_judge", "long_form_answer"})
                return record
            return Drop("long_form_answer", f"{_words(a)} words and no stated final answer")
        record["answer_type"] = infer_answer_type(record["answer"], choices=record.get("choices") or [],
                                                  question_type=qtype)
        return record

    async def llm(self, record: Record, ctx: StageContext):
        reply, completion = await self.ask(ctx, PROMPT.format(question=record["question"], answer=record["answer"]),
                                           VerifiableReply)
        if not reply.verifiable:
            reason = reply.reason if reply.reason != "ok" else "not_verifiable"
            return Drop(reason, "model", model=completion.model, cost=completion.cost)
        final = (reply.final_answer or "").strip()
        # take the model's final answer only when it is copied from the given answer, never invented
        if final and final != record["answer"].strip() and canonical_text(final) in canonical_text(record["answer"]):
            record = self._use_final(record, final)
        if record.get("question_type") == "proof":
            record["answer_type"] = "proof"
        else:
            record["answer_type"] = infer_answer_type(record["answer"], choices=record.get("choices") or [],
                                                      question_type=record.get("question_type"))
        return kept(record, completion)

    @staticmethod
    def _use_final(record: Record, final: str, worked: bool = False) -> Record:
        if not record.get("solution"):
            record["solution"] = record["answer"]
        record["answer"] = final
        if worked:  # taken from the working's last sentence (worked.py): a judge may want to confirm it
            record["tags"] = sorted({*(record.get("tags") or []), "final_from_working"})
        return record
