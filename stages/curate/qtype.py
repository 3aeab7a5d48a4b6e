"""Question type: open-ended, multiple-choice (options parsed), proof, or true/false.

Sets `question_type`, `choices` (option contents, in label order) and `answer_type`. A
multiple-choice answer is stored as its option letter ("B"), whatever form the dump used ("B",
"(b)", "B) 4" or the option's content "4"); a multiple-choice item whose answer names no option
is dropped (`choice_answer_unresolved`): its ground truth cannot be checked. A multiple-select
answer (several options, "; "-separated, or several letters) becomes their letters ("A, B, D",
tag `multi_select`), which the answer checker grades as a set.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from rlclimb.environments.answer_check import (
    boolean_value,
    choice_index,
    choice_indices,
    infer_answer_type,
)
from rlclimb.pipelines.stage import Drop, Record, StageContext

from .common import CurateConfig, CurateStage, kept

QuestionType = Literal["open", "multiple_choice", "proof", "true_false"]

# Options on their own lines: "A. 3", "(B) 4", "c) 5", "[D] 6".
_LINE_OPTION = re.compile(r"^\s*[\(\[]?([A-Ha-h])[\)\].:]\s*(.+?)\s*$")
# Inline options "(A) 3 (B) 4 (C) 5" or "A) 3  B) 4": a label then text up to the next label.
_INLINE_LABEL = re.compile(r"(?:(?<=\s)|^)(?:\(([A-Ha-h])\)|([A-H])[\).:])\s+")
_TF_QUESTION = re.compile(
    r"^\s*(?:true\s+or\s+false|t\s*/\s*f|true\s*/\s*false)\b|\b(?:true\s+or\s+false|t\s*/\s*f|true\s*/\s*false)\s*[?.:)]?\s*$"
    r"|\b(?:state|determine|decide)\s+whether\b.*\b(?:true|false)\b|\bis\s+(?:it|this|the\s+following(?:\s+statement)?)\s+true\b",
    re.I | re.S,
)
_YES_NO_START = re.compile(r"^\s*(?:is|are|does|do|did|can|could|will|would|has|have|was|were|should|must)\b", re.I)
_PROOF = re.compile(
    r"\b(?:prove|show|demonstrate|establish|verify|justify|argue)\s+that\b|^\s*prove\b|\bgive\s+an?\s+(?:proof|argument)\b"
    r"|\b(?:montrez|démontrez|prouvez|vérifiez|justifiez)\s+(?:que|qu['’])"
    r"|\bprove\s+(?:or\s+disprove|the\s+following|by\s+induction)\b|\bderive\s+(?:the|an?)\b",
    re.I,
)
# Unlettered options after a bubble or box glyph ("⃝2.5g ⃝g ⃝g/5"; U+20DD is the combining
# enclosing circle, which a PDF's text layer gives for a printed answer bubble): lettered A, B, ... in order.
_BUBBLE = re.compile(r"[\u20dd\u25cb\u25ef\u25a1\u2610\u274f\u2751]")
# Textbook exercises with parts "(a) ... (b) ..." look like lettered options; they are not.
_PART_LABEL = re.compile(r"\(([a-h])\)")
# an answer that labels its parts "a) ... b) ..." (no opening parenthesis): at the start or after a space
_BARE_PART_LABEL = re.compile(r"(?:^|(?<=\s))([a-h])\)\s")
_EACH_PART = re.compile(r"\b(?:each\s+of\s+the\s+following|in\s+each\s+case|for\s+each|each\s+part|all\s+of\s+the\s+following\s+(?:sets|expressions|statements|functions|matrices|systems))\b", re.I)
_TASK = re.compile(r"(?:find|show|prove|compute|calculate|determine|evaluate|explain|describe|give|list|write|solve"
                   r"|verify|use|sketch|express|suppose|let|is|are|does|do|can|what|which|how|why|define|construct|state"
                   r"|name|identify|classify|decide|draw|simplify|factor|differentiate|integrate)\b", re.I)
_COMPUTE_ASK = re.compile(
    r"\b(?:find|compute|calculate|determine|evaluate|what\s+is|what\s+are|how\s+many|how\s+much|solve\s+for"
    r"|trouvez|calculez|déterminez|évaluez|résolvez|quel(?:le)?s?\s+est)\b", re.I
)


_CONNECTIVE = re.compile(r"(?:and|or|to|of|in|et|ou)", re.I)


def split_options(question: str) -> tuple[str, list[str]]:
    """(stem, option contents) when the question lists lettered options A, B, ... in order, or
    unlettered ones after bubble glyphs; (question, []) otherwise."""
    bubbles = _BUBBLE.split(question)
    if len(bubbles) >= 3 and bubbles[0].strip():
        options = [o.strip(" ,;\n") for o in bubbles[1:]]
        if all(options) and all(len(o) < 300 for o in options):
            return bubbles[0].strip(), options
    lines = question.split("\n")
    # options on their own lines: the longest run of consecutive A, B, C... lines
    for start in range(len(lines)):
        m = _LINE_OPTION.match(lines[start])
        if not m or m.group(1).upper() != "A":
            continue
        options, i = [], start
        while i < len(lines) and (m := _LINE_OPTION.match(lines[i])) and m.group(1).upper() == chr(65 + len(options)):
            options.append(m.group(2))
            i += 1
        if len(options) >= 2:
            stem = "\n".join(lines[:start] + lines[i:]).strip()
            return stem, options
    # inline options: labels A, B, C... in order, each followed by its text
    labels = [m for m in _INLINE_LABEL.finditer(question)]
    for k, m in enumerate(labels):
        if (m.group(1) or m.group(2)).upper() != "A":
            continue
        run = [m]
        for nxt in labels[k + 1 :]:
            if (nxt.group(1) or nxt.group(2)).upper() == chr(65 + len(run)):
                run.append(nxt)
        if len(run) >= 2 and all(bool(r.group(1)) == bool(m.group(1)) for r in run):
            options = [question[a.end() : b.start()].strip(" ,;\n") for a, b in zip(run, run[1:], strict=False)]
            options.append(question[run[-1].end() :].strip(" ,;.\n"))
            if re.search(r"\bparts?\s*$", question[: m.start()], re.I) or any(_CONNECTIVE.fullmatch(o) for o in options):
                continue  # "Use your answers to parts (a) and (b) to find ...": parts named in a sentence
            if all(options) and all(len(o) < 300 for o in options):
                return question[: m.start()].strip(), options
    return question, []


def multi_part(question: str, answer: str) -> bool:
    """An exercise in parts (a), (b), ... rather than a choice among options: the answer answers
    several parts, or refers to a part in passing ("For (a), use ..."), or the stem asks for each."""
    labels = _PART_LABEL.findall(answer)
    if len(set(labels)) >= 2 or len(set(_BARE_PART_LABEL.findall(answer))) >= 2:
        return True
    if labels and not re.match(r"\s*\(([a-hA-H])\)", answer):
        return True
    if bool(_EACH_PART.search(question)) and len(set(_PART_LABEL.findall(question))) >= 2:
        return True
    _, options = split_options(question)  # "(a) Find ...", "(b) Show that ...": tasks, not options
    return len(options) >= 2 and sum(bool(_TASK.match(o) or o.rstrip().endswith("?")) for o in options) >= 2


# "This is false.", "The statement is also true: ..." (textbook keys answer true/false items so)
_VERDICT_LEAD = re.compile(r"^\W*(?:this|it|that|the\s+(?:statement|claim|assertion))\s+is\s+(?:also\s+)?(true|false)\b", re.I)


def verdict_value(answer: str) -> bool | None:
    """The yes/no an answer gives: "Yes", "False.", "No, because ...", "This is also false, ..."."""
    value = boolean_value(answer)
    if value is None and (m := _VERDICT_LEAD.match(answer)):
        value = m.group(1).lower() == "true"
    return value


def _top_level_pieces(answer: str) -> list[str]:
    """The answer cut at commas and semicolons outside brackets: "r = R\\sqrt{2/3}, r = R/2, no max."."""
    pieces, depth, cur = [], 0, ""
    for ch in answer:
        depth += ch in "([{" and 1 or ch in ")]}" and -1 or 0
        if ch in ",;" and depth == 0:
            pieces.append(cur)
            cur = ""
        else:
            cur += ch
    return [p.strip(" .") for p in [*pieces, cur] if p.strip(" .")]


def parts_in_order(question: str, answer: str, options: list[str]) -> bool:
    """"A cylinder (a) whose volume is a maximum; (b) ...; (c) ..." answered "r = ..., r = ..., no max.":
    lower-case parts, one value each, in order, not a choice among options."""
    labels = _PART_LABEL.findall(question)
    return (len(labels) == len(options) >= 2 and choice_index(answer, options) is None
            and len(_top_level_pieces(answer)) == len(options))


def exact_option(answer: str, options: list[str]) -> int | None:
    """The option whose text the answer repeats exactly (whitespace aside): "\\sqrt{2} times faster"
    is option C even where text normalization would make it "2 times faster" (option A)."""
    want = " ".join(answer.split()).rstrip(".")
    hits = [i for i, o in enumerate(options) if " ".join(o.split()).rstrip(".") == want]
    return hits[0] if len(hits) == 1 else None


def classify(question: str, answer: str) -> tuple[QuestionType, list[str]]:
    """The embedded rules: options first (unless they are an exercise's parts), then true/false,
    then proof, else open."""
    stem, options = split_options(question)
    # no stem: "(a) Define a function ... (b) Define a function ...": parts, there is nothing to choose for
    if options and stem.strip() and not multi_part(question, answer) and not parts_in_order(question, answer, options):
        return "multiple_choice", options
    if _TF_QUESTION.search(question):
        return "true_false", []
    if _YES_NO_START.match(question) and boolean_value(answer) is not None:
        return "true_false", []
    if re.search(r"\bprove\s+or\s+disprove\b", question, re.I) and verdict_value(answer) is not None:
        return "true_false", []  # answered by its verdict: "Prove or disprove: ... — True."
    proof = _PROOF.search(question)
    if proof and not _COMPUTE_ASK.search(question[proof.end() :]):
        return "proof", []
    return "open", []


def _canonical_boolean(answer: str, question: str) -> str:
    value = verdict_value(answer)
    if value is None:
        return answer
    if re.search(r"\b(?:true|false)\b|\bprove\s+or\s+disprove\b", question, re.I):
        return "True" if value else "False"
    return "Yes" if value else "No"


class QuestionTypeReply(BaseModel):
    question_type: QuestionType
    choices: list[str] = Field(default_factory=list, description="option contents in order, without labels")
    correct_choice: str | None = Field(None, description="letter of the correct option (multiple choice only)")

    @model_validator(mode="after")
    def _choices_make_sense(self) -> QuestionTypeReply:
        if self.question_type == "multiple_choice":
            if len(self.choices) < 2:
                raise ValueError("a multiple-choice question needs at least 2 choices")
            letter = (self.correct_choice or "").strip().strip("()").upper()[:1]
            if not letter or not 0 <= ord(letter) - 65 < len(self.choices):
                raise ValueError(f"correct_choice must be a letter A..{chr(64 + len(self.choices))}")
            self.correct_choice = letter
        return self


PROMPT = """Classify this exam question.
question_type: "multiple_choice" if it lists options to choose from; "true_false" if it asks \
whether a statement is true (or a yes/no question); "proof" if it asks to prove or show a \
statement; "open" otherwise.
For multiple_choice, list the option contents in order (without their labels) and give the \
letter of the correct option, using the reference answer.

Question:
{question}

Reference answer:
{answer}

Reply with JSON: {{"question_type": ..., "choices": [...], "correct_choice": "A" or null}}"""


class QuestionTypeConfig(CurateConfig):
    pass


class QuestionTypeStage(CurateStage):
    name = "question_type"
    version = "8"  # v8: a multiple-select answer (several options) is their letters
    Config = QuestionTypeConfig

    def embedded(self, record: Record, ctx: StageContext) -> Record | Drop:
        qtype, choices = classify(record["question"], record["answer"])
        if multi_part(record["question"], record["answer"]):
            record["tags"] = [*(record.get("tags") or []), "multi_part"]
        return self._apply(record, qtype, choices, None)

    async def llm(self, record: Record, ctx: StageContext):
        reply, completion = await self.ask(ctx, PROMPT.format(question=record["question"], answer=record["answer"]),
                                           QuestionTypeReply)
        result = self._apply(record, reply.question_type, reply.choices, reply.correct_choice)
        return result if isinstance(result, Drop) else kept(result, completion)

    def _apply(self, record: Record, qtype: QuestionType, choices: list[str], letter: str | None) -> Record | Drop:
        record["question_type"] = qtype
        record["choices"] = list(choices) if qtype == "multiple_choice" else []
        if qtype == "multiple_choice":
            idx = ord(letter) - 65 if letter else exact_option(record["answer"], choices)
            idx = choice_index(record["answer"], choices) if idx is None else idx
            if idx is None and (several := choice_indices(record["answer"], choices)) is not None:
                # "Which of the following are ...? [Select all that apply]": the gold is their letters
                record["answer"] = ", ".join(chr(65 + i) for i in sorted(several))
                record["answer_type"] = "choice"
                record["tags"] = sorted({*(record.get("tags") or []), "multi_select"})
                return record
            if idx is None:
                return Drop("choice_answer_unresolved",
                            f"answer {record['answer'][:80]!r} names none of {len(choices)} options")
            record["answer"] = chr(65 + idx)
        elif qtype == "true_false":
            canonical = _canonical_boolean(record["answer"], record["question"])
            if canonical != record["answer"].strip() and not record.get("solution"):
                record["solution"] = record["answer"]  # "No, because 91 = 7 x 13": keep the reason
            record["answer"] = canonical
        record["answer_type"] = infer_answer_type(record["answer"], choices=record["choices"], question_type=qtype)
        return record
