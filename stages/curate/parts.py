"""Split exercises in parts: "Describe each set. (a) A ∩ B (b) B ∩ C" answered "(a) {2}; (b) {5}"
becomes two items, "Describe each set.\\n(a) A ∩ B" -> "{2}" and "...(b) B ∩ C" -> "{5}".

Textbooks print most exercises this way, and one answer per part is what the answer checker can
verify. A part is emitted only when the answer labels it; parts the answer skips (keys often
answer some parts) are dropped with the parent's other unanswered parts, not guessed. Items
whose answer does not start with a part label ("For (a), use induction") are left whole; the
question-type stage tags them `multi_part`."""

from __future__ import annotations

import json
import re

from rlclimb.pipelines.stage import Record, Stage, StageConfig, StageContext
from rlclimb.schemas.records import QAItem, qa_id

_LABEL = re.compile(r"(?<![\w)])\(([a-h])\)\s*")
_TRAILING_JOIN = re.compile(r"(?:\s|[;,]|\band\b|\bor\b)*$")


def sequential_labels(text: str, *, from_start: bool) -> list[re.Match]:
    """Part labels in order (a), (b), ... — in an answer they may skip parts but never go back."""
    out: list[re.Match] = []
    for m in _LABEL.finditer(text):
        letter = m.group(1)
        if not out:
            if from_start and text[: m.start()].strip():
                return []
            if letter != "a" and not from_start:
                continue
            out.append(m)
        elif from_start and letter > out[-1].group(1) or not from_start and ord(letter) == ord(out[-1].group(1)) + 1:
            out.append(m)
    return out


def _chunks(text: str, labels: list[re.Match]) -> dict[str, str]:
    ends = [m.start() for m in labels[1:]] + [len(text)]
    return {m.group(1): _TRAILING_JOIN.sub("", text[m.end() : end]) for m, end in zip(labels, ends, strict=True)}


def split_parts(question: str, answer: str) -> list[tuple[str, str, str]]:
    """[(label, question for the part, its answer)], or [] when the item is not split."""
    q_labels = sequential_labels(question, from_start=False)
    a_labels = sequential_labels(answer, from_start=True)
    if len(q_labels) < 2 or not a_labels:
        return []
    stem = question[: q_labels[0].start()].strip()
    parts, answers = _chunks(question, q_labels), _chunks(answer, a_labels)
    if not set(answers) <= set(parts) or not stem:
        return []
    return [(k, f"{stem}\n({k}) {parts[k]}", answers[k].rstrip(".").strip()) for k in sorted(answers) if answers[k]]


class SplitPartsConfig(StageConfig):
    min_parts: int = 1  # answered parts needed to split (1: even a key answering only (a) splits)


class SplitParts(Stage):
    name = "split_parts"
    version = "1"
    kind = "expand"
    Config = SplitPartsConfig
    output_model = QAItem

    def process(self, record: Record, ctx: StageContext) -> list[Record]:
        parts = split_parts(record["question"], record.get("answer") or "")
        if len(parts) < self.config.min_parts or not parts:
            return [record]
        out = []
        number = (record.get("source") or {}).get("number")
        for label, question, answer in parts:
            child = {**record, "question": question, "answer": answer, "solution": None}
            meta = {**json.loads(record.get("meta") or "{}"), "part": label, "parent_id": record["id"]}
            child["meta"] = json.dumps(meta, ensure_ascii=False, sort_keys=True)
            if number:
                child["source"] = {**record["source"], "number": f"{number}({label})"}
            child["id"] = qa_id(question, answer)
            out.append(child)
        return out
