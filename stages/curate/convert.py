"""Conversion: multiple-choice and proof questions -> open-ended questions with a checkable answer.

Multiple choice: when the stem is self-contained ("What is the SI unit of force?"), the stem
becomes the question and the correct option's content the answer; a stem that needs its options
("Which of the following is prime?") is rewritten by the LLM path and dropped by the embedded
one: kept as multiple choice (tag `mcq_unconverted`; `unconvertible: drop` ledgers it as
`mcq_not_self_contained` / `mcq_answer_not_checkable` instead): a question with its options is
still checkable by its letter. A configurable share of multiple-choice items stays unconverted
(tag `mcq_kept`), chosen by a hash of the item id: the same items on every run; so does every
multiple-select item (several options right: no one option is the open answer).
Proofs: a claim with a checkable value ("Prove that $\\sum_{k=1}^n k = \\frac{n(n+1)}{2}$")
becomes "Find a closed-form expression for ..." with the value as the answer; other proofs are
dropped (`proof_not_convertible`).
The LLM path runs `runs` times (3) behind a consensus stage: the rewrites must agree on the
answer by the answer checker, else the item is dropped (`no_consensus`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from rlclimb.environments.answer_check import check, infer_answer_type
from rlclimb.pipelines.consensus import Consensus
from rlclimb.pipelines.stage import Drop, Keep, Record, Stage, StageContext

from .common import CurateConfig, CurateStage, add_tag, kept
from .qtype import split_options

_NOT_SELF_CONTAINED = re.compile(
    r"\b(?:which|what|who)\s+(?:one\s+)?of\s+(?:the\s+)?(?:following|above|below|these|those|options|choices|statements|answers)"
    r"|\bthe\s+following\b|\bwhich\s+one\b|\b(?:all|none|both|each)\s+of\s+the\s+(?:above|following|options)"
    r"|\bamong\s+the\s+(?:following|options|choices|answers)|\bthe\s+(?:options|choices|alternatives)\b"
    r"|\bwhich\s+(?:statement|option|choice|answer|expression|graph|pair|set)\b|\b(?:true|false|correct|incorrect)\s+statements?\b"
    r"|\bexcept\b|\bnot\s+true\b|\bwhich\b[^?]*\bnot\b|\bleast\s+likely\b|\bbest\s+(?:describes|explains|represents)\b",
    re.I,
)
_META_OPTION = re.compile(r"\b(?:all|none|both|neither)\s+of\s+(?:the\s+)?(?:above|these|them)\b|^\s*\(?[A-H]\)?\s+(?:and|&)\s+\(?[A-H]\)?\s*$"
                          r"|^\s*(?:both|neither)\b|\bcannot\s+be\s+determined\b|\bnot\s+enough\s+information\b", re.I)

# ---- proofs ----------------------------------------------------------------------------------

_PROOF_LEAD = re.compile(r"(?:^|(?<=[.;:!?]\s)|(?<=\n))?\s*(?:prove|show|demonstrate|verify|establish)\s+that\s+", re.I)
_TAIL_OK = re.compile(r"^\s*(?:,?\s*(?:for|where|when|if)\s+(?:all|every|each|any|positive|integers?|real|n|x|\$)[^.]{0,80})?\s*[.!]?\s*$", re.I)
_HARD_OPS = re.compile(r"\\(?:sum|int|prod|lim|binom|frac|sqrt|log|ln|sin|cos|tan|det|oint|iint)|[!^]|[a-zA-Z]_\{?\w|\w\(")


def top_level_split(latex: str, sep: str) -> list[str]:
    """Split at `sep` outside braces and brackets: "\\sum_{k=1}^n k = 1" has one top-level "="."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(latex):
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        elif ch == sep and depth == 0 and latex[i - 1 : i] not in ("<", ">", "!", "\\") and latex[i + 1 : i + 2] != "=":
            parts.append(latex[start:i])
            start = i + 1
    parts.append(latex[start:])
    return parts


@dataclass(frozen=True)
class ProofClaim:
    context: str  # the text before "Prove that"
    subject: str  # what to compute: a LaTeX expression, or a noun phrase ("the sum of ...")
    value: str  # the claimed value / closed form: the answer
    tail: str  # "for all n >= 1", kept in the question
    latex: bool  # subject is LaTeX

    def question(self) -> str:
        if self.latex:
            has_vars = infer_answer_type(self.value) == "expression"
            ask = "Find a closed-form expression for" if has_vars else "Find the value of"
            subject = f"${self.subject}$"
        else:  # "the sum of the first $n$ odd numbers"
            ask, subject = "Find", self.subject
        tail = f" {self.tail.strip().rstrip('.').lstrip(', ')}" if self.tail.strip(" .") else ""
        return f"{self.context} {ask} {subject}{tail}.".strip()


def proof_claim(question: str) -> ProofClaim | None:
    """The checkable claim of a proof question: an equation `$L = R$` (or "the X is $R$") whose
    right side is a value or closed form. None when the claim has no such value."""
    leads = list(_PROOF_LEAD.finditer(question))
    if not leads:
        return None
    lead = leads[-1]  # the last "prove that": earlier ones may be setup
    context, claim = question[: lead.start()].strip(), question[lead.end() :]
    m = re.match(r"\s*\$([^$]+)\$(.*)$", claim, re.S)
    if m and _TAIL_OK.match(m.group(2)):
        sides = top_level_split(m.group(1), "=")
        if len(sides) == 2 and not re.search(r"\\(?:le|ge|leq|geq|ne|neq|equiv|approx)\b|[<>]", m.group(1)):
            lhs, rhs = sides[0].strip(), sides[1].strip()
            if lhs and rhs and lhs != rhs and _HARD_OPS.search(lhs + " ") and infer_answer_type(rhs) in ("numeric", "expression"):
                return ProofClaim(context, lhs, rhs, m.group(2), latex=True)
        return None
    m = re.match(r"\s*(the\s+[^.]{3,120}?)\s+(?:is|equals|is\s+equal\s+to)\s+\$([^$]+)\$(.*)$", claim, re.S | re.I)
    if m and _TAIL_OK.match(m.group(3)) and infer_answer_type(m.group(2)) in ("numeric", "expression"):
        return ProofClaim(context, m.group(1), m.group(2).strip(), m.group(3), latex=False)
    return None


# ---- the stage ---------------------------------------------------------------------------------


def keeps_mcq(record: Record, share: float, seed: int) -> bool:
    """Whether this multiple-choice item is in the share kept unconverted (stable per item)."""
    if share <= 0:
        return False
    h = int.from_bytes(hashlib.sha256(f"{seed}:{record.get('id')}".encode()).digest()[:8], "big")
    return h / 2**64 < share


def _set_meta(record: Record, **values) -> None:
    try:
        meta = json.loads(record.get("meta") or "{}")
    except ValueError:
        meta = {}
    if not isinstance(meta, dict):
        meta = {"meta": meta}
    meta.update(values)
    record["meta"] = json.dumps(meta, ensure_ascii=False, sort_keys=True, default=str)


class ConvertConfig(CurateConfig):
    keep_mcq_share: float = Field(0.1, ge=0, le=1)  # share of multiple-choice items left as they are
    mcq_seed: int = 0  # picks which items form that share
    max_answer_words: int = 12  # a correct option longer than this makes no checkable open answer
    unconvertible: Literal["keep", "drop"] = "keep"  # embedded: an MCQ that cannot become open-ended stays MCQ
    runs: int = Field(3, ge=1)  # LLM path: conversions per item, then consensus
    quorum: int | None = None  # LLM path: runs that must agree (default: all)


class ConvertReply(BaseModel):
    convertible: bool
    question: str = ""
    answer: str = ""


MCQ_PROMPT = """Rewrite this multiple-choice question as an open-ended question with one short, \
checkable answer (a number, expression, or short term), without listing options. If the stem \
already stands alone, keep it as it is; if it depends on its options (e.g. "which of the \
following"), rewrite it so that the correct option is the unique answer. Keep every given number \
and condition. If no such rewrite exists, set convertible to false.

Question:
{question}

Correct option: ({letter}) {content}

Reply with JSON: {{"convertible": true/false, "question": "...", "answer": "..."}}"""

PROOF_PROMPT = """Rewrite this proof question as an open-ended question whose answer is the value \
or closed form that the proof establishes (e.g. "Prove that the sum of the first n odd numbers is \
n^2" -> "Find the sum of the first n odd numbers.", answer "n^2"). Keep every given number and \
condition. If the statement has no such value (an inequality, an existence or a qualitative \
claim), set convertible to false.

Question:
{question}

Reply with JSON: {{"convertible": true/false, "question": "...", "answer": "..."}}"""


def _settled(record: Record) -> bool:
    """A "prove or disprove" item verifiable kept by its verdict (a judge grades the statement): no claim to convert."""
    return "statement_answer" in (record.get("tags") or [])


def _multi_select(record: Record) -> bool:
    """Several options are right ("Select all that apply"): no one option's content is the open answer."""
    return "multi_select" in (record.get("tags") or [])


class ConvertStage(CurateStage):
    name = "convert"
    version = "4"  # v4: a proof item settled by its verdict stays; v3: a multiple-select item stays multiple choice
    Config = ConvertConfig

    def embedded(self, record: Record, ctx: StageContext) -> Record | Keep | Drop:
        qtype = record.get("question_type")
        if qtype == "multiple_choice":
            if keeps_mcq(record, self.config.keep_mcq_share, self.config.mcq_seed) or _multi_select(record):
                return add_tag(record, "mcq_kept")
            stem, options = split_options(record["question"])
            content = self._correct_option(record, options)
            if isinstance(content, Drop):
                return self._unconverted(record, content)
            if _NOT_SELF_CONTAINED.search(stem) or len(stem) < 8:
                return self._unconverted(record, Drop("mcq_not_self_contained", "the stem needs its options; the LLM path can rewrite it"))
            return self._converted(record, stem, content, "multiple_choice")
        if qtype == "proof" and _settled(record):
            return record
        if qtype == "proof":
            claim = proof_claim(record["question"])
            if claim is None:
                return Drop("proof_not_convertible", "no claimed value or closed form to ask for")
            return self._converted(record, claim.question(), claim.value, "proof")
        return record

    async def llm(self, record: Record, ctx: StageContext):
        qtype = record.get("question_type")
        if qtype == "multiple_choice":
            if keeps_mcq(record, self.config.keep_mcq_share, self.config.mcq_seed) or _multi_select(record):
                return add_tag(record, "mcq_kept")
            _, options = split_options(record["question"])
            content = self._correct_option(record, options)
            if isinstance(content, Drop):
                return content
            prompt = MCQ_PROMPT.format(question=record["question"], letter=record["answer"], content=content)
        elif qtype == "proof" and not _settled(record):
            prompt = PROOF_PROMPT.format(question=record["question"])
        else:
            return record
        reply, completion = await self.ask(ctx, prompt, ConvertReply)
        if not reply.convertible or not reply.question.strip() or not reply.answer.strip():
            reason = "mcq_not_convertible" if qtype == "multiple_choice" else "proof_not_convertible"
            return Drop(reason, "model: no open-ended form with a checkable answer", model=completion.model, cost=completion.cost)
        if split_options(reply.question)[1]:
            return Drop("conversion_kept_options", "the rewrite still lists options", model=completion.model, cost=completion.cost)
        return kept(self._converted(record, reply.question.strip(), reply.answer.strip(), qtype), completion,
                    reason=f"converted from {qtype}")

    def _unconverted(self, record: Record, drop: Drop) -> Record | Drop:
        if self.config.unconvertible == "keep" and drop.reason in ("mcq_not_self_contained", "mcq_answer_not_checkable"):
            return add_tag(record, "mcq_unconverted")
        return drop

    def _correct_option(self, record: Record, options: list[str]) -> str | Drop:
        choices = record.get("choices") or options
        letter = (record.get("answer") or "").strip().strip("()").upper()[:1]
        idx = ord(letter) - 65 if letter else -1
        if not 0 <= idx < len(choices):
            return Drop("choice_answer_unresolved", f"answer {record.get('answer')!r} is not an option letter")
        content = choices[idx].strip()
        if _META_OPTION.search(content):
            return Drop("mcq_not_self_contained", f"the correct option is {content!r}")
        if len(re.findall(r"\w+", content)) > self.config.max_answer_words:
            return Drop("mcq_answer_not_checkable", f"the correct option has {len(content.split())} words")
        return content

    @staticmethod
    def _converted(record: Record, question: str, answer: str, origin: str) -> Record:
        _set_meta(record, converted_from=origin, original_question=record["question"], original_answer=record["answer"],
                  original_choices=record.get("choices") or [])
        record.update(question=question, answer=answer, question_type="open", choices=[],
                      answer_type=infer_answer_type(answer))
        return add_tag(record, f"converted_from_{'mcq' if origin == 'multiple_choice' else origin}")

    # consensus: a run's vote is its answer; two runs agree when the answer checker says so
    def vote(self, record: Record) -> str:
        return json.dumps({"qt": record.get("question_type"), "answer": record.get("answer"),
                           "type": record.get("answer_type")}, sort_keys=True)

    def agree(self, a: str, b: str) -> bool:
        va, vb = json.loads(a), json.loads(b)
        if va["qt"] != vb["qt"]:
            return False
        if va["qt"] == "multiple_choice":
            return va["answer"] == vb["answer"]
        return check(va["answer"], vb["answer"], va["type"]).equivalent is True


# Failures worth retrying on a later run (the engine does not cache these; see engine.rowcache.is_transient).
def with_consensus(stage: ConvertStage) -> Stage:
    """The LLM conversion behind consensus (embedded conversion is deterministic: one run)."""
    c = stage.config
    if c.method != "llm" or c.runs <= 1:
        return stage
    return Consensus(stage, n=c.runs, quorum=c.quorum or c.runs)
