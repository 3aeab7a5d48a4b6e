"""Extract (structural, no model): structured units -> question and answer spans.

- an exercise or worked example: the question is its text up to an answer marker
  ("Solution.", "Answer:", "Ans."); what follows the marker is its inline answer. The shared
  instruction that governs it ("In Exercises 5-8, solve for x.") is prepended (configurable),
  so the question stands on its own;
- an answer-key entry: the answer text, without a leading "Hint." / "Answer." marker;
- worked examples without a solution and instructions yield nothing (they are not QA).
"""

from __future__ import annotations

import re
from typing import Literal

from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext

from .extract_records import QASpan, span_id
from .structure_patterns import ANSWER_MARKER, KEY_PREFIX

_TITLED_KEY = re.compile(r"^[^\n]{1,60}?\.\s*\n?(?:Hint|Answer|Solution)\s*[.:]\s*")


_CHOICE_FLAG = re.compile(r"\s*[(\[](?:correct(?: answer)?|right answer)[)\]]", re.IGNORECASE)
# where an option starts: a drawn box or circle, or "(a)" / "a)" / "A." after a space or line start
_OPTION_START = re.compile(r"[\u20dd\u25cb\u25ef\u25cf\u25a1\u2610\u2022]|(?:(?<=\s)|^)\(?[a-hA-H][).](?=\s)")


def split_choice_answer(text: str) -> tuple[str, str] | None:
    """Multiple choice with the right option flagged inline ("... ⃝ 49.6° (Correct)"): (the
    question with its options, flags removed; the flagged option(s)), or None."""
    flags = list(_CHOICE_FLAG.finditer(text))
    if not flags:
        return None
    options = []
    for f in flags:
        starts = [m.end() for m in _OPTION_START.finditer(text, 0, f.start())]
        if not starts:
            return None  # a flag outside any option: not a choice list
        options.append(" ".join(text[starts[-1]:f.start()].split()))
    return _CHOICE_FLAG.sub("", text).strip(), "; ".join(o for o in options if o)


def split_inline_answer(text: str) -> tuple[str, str | None]:
    """(question, answer or None): the answer starts at the first line or sentence that opens
    with an answer marker ("Solution.", "Answer:", ...); in a choice list, the flagged option."""
    choice = split_choice_answer(text)
    if choice is not None and choice[1]:
        return choice
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = ANSWER_MARKER.match(line)
        if m and i > 0:
            return "\n".join(lines[:i]).strip(), "\n".join([line[m.end():], *lines[i + 1:]]).strip()
        idx = _marker_in_line(line)
        if idx is not None:
            head, tail = line[:idx], line[idx:]
            m = ANSWER_MARKER.match(tail)
            question = "\n".join([*lines[:i], head]).strip()
            if question:
                return question, "\n".join([tail[m.end():], *lines[i + 1:]]).strip()
    return text.strip(), None


def _marker_in_line(line: str) -> int | None:
    """Position of "Solution." / "Answer:" after a sentence end inside a joined line."""
    for marker in (" Solution", " Answer", " Ans.", " Sol.", " Réponse", " Lösung", " Solución", " Решение", " Ответ"):
        start = 0
        while (idx := line.find(marker, start)) > 0:
            before = line[:idx].rstrip()
            if before.endswith((".", "?", ":", ")", "]")) and ANSWER_MARKER.match(line[idx + 1:]):
                after = ANSWER_MARKER.match(line[idx + 1:])
                rest = line[idx + 1 + after.end():]
                if after.group(0).rstrip().endswith((".", ":", ")")) or not rest[:1].islower():
                    return idx + 1
            start = idx + 1
    return None


class ExtractConfig(StageConfig):
    # "structure": numbering and markers only; "llm": an LLM marks question and answer spans in
    # each structured unit; "both": structural spans, checked by the LLM, plus LLM spans found in
    # running text the structure has no item for (see extract_llm); "fallback": structural spans,
    # and the LLM only for the exercise / answer-zone pages where the rules recognized no item
    method: Literal["structure", "llm", "both", "fallback"] = "structure"
    llm_role: str = "extractor"
    prepend_instruction: bool = True  # question = shared instruction + item text
    examples: bool = True  # worked examples with a solution become QA
    min_question_chars: int = 8


class ExtractQA(Stage):
    name = "extract"
    version = "1"
    kind = "expand"
    Config = ExtractConfig
    output_model = QASpan

    def process(self, record: Record, ctx: StageContext) -> list[Record] | Drop:
        return spans_of_unit(record, self.config)


def spans_of_unit(unit: Record, config: ExtractConfig) -> list[Record] | Drop:
    kind, text = unit["kind"], unit["text"]
    src = unit["source"]
    base = {
        "path": list(unit.get("path") or []), "section": unit.get("section"),
        "section_title": unit.get("section_title"), "number": unit.get("number"),
        "source": src, "backends": list(unit.get("backends") or []), "order": unit.get("order", 0),
        "method": "structure", "confidence": 1.0,
    }
    if kind == "answer":
        answer = KEY_PREFIX.sub("", text, count=1).strip()
        m = _TITLED_KEY.match(answer)  # "Fibonacci Numbers.\nHint. ...": the entry's title, then the answer
        if m:
            answer = answer[m.end():].strip()
        if not answer:
            return Drop("empty_answer", f"{_where(unit)}: answer-key entry {unit.get('label')!r} has no text")
        return [QASpan(id=span_id("answer", src.get("document"), unit["order"], answer), role="answer",
                       kind="answer", text=answer, **base).model_dump()]
    if kind not in ("exercise", "example"):
        return []
    question, answer = split_inline_answer(text)
    if kind == "example" and (answer is None or not config.examples):
        return []  # an example without a worked solution is exposition, not a QA pair
    instruction = unit.get("instruction")
    if instruction and config.prepend_instruction:
        question = f"{instruction}\n{question}"
    if len(question) < config.min_question_chars:
        return Drop("empty_question", f"{_where(unit)}: item {unit.get('label')!r} has no statement ({question!r})")
    span = QASpan(
        id=span_id("question", src.get("document"), unit["order"], question), role="question", kind=kind,
        text=question, answer=answer or None, instruction=instruction,
        answer_source=src if answer else None, **base,
    )
    return [span.model_dump()]


def _where(unit: Record) -> str:
    src = unit["source"]
    return f"{src.get('document')} page {src.get('page')}"
