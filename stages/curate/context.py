"""Part context: a part that leans on the parts before it ("(b) What is the resistance?" after "(a)
... from a 12 V battery ..."; "(c) Repeat the prior item ..."; "(c) Find P such that T = PSP^{-1}"
after "(b) Find S = ...") gets them back, as the book printed them, in its question:

    <stem>
    (a) <earlier part>
    (b) <this part>
    Answer part (b) only.

`split_parts` decides which parts lean on earlier ones (`parts.leans_on_earlier`: several cues,
noted in the part's meta `context`); the earlier parts go in only here, after the stages that
judge the part's own text (question type, verifiability, usability, conversion read one ask, and
"(a) ... (b) ..." in a question reads to them as several), and before leakage, which must see the
question as it is trained on. The last line says which part is asked, in the text's language.
A question that no longer holds its part's label (conversion rewrote it) cannot take the parts
back: dropped as `needs_context`.
"""

from __future__ import annotations

import json
import re

from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext
from rlclimb.schemas.records import qa_id

ANSWER_ONLY = {"en": "Answer part ({letter}) only.", "fr": "Répondre seulement à la partie ({letter})."}
_FRENCH = {"le", "la", "les", "des", "une", "est", "pour", "que", "dans", "avec", "calculer", "trouver", "soit"}
_ENGLISH = {"the", "and", "of", "is", "for", "that", "with", "find", "what", "let"}


def answer_only(text: str, letter: str) -> str:
    words = re.findall(r"[a-zàâçéèêëîïôûùüÿœ]+", text.casefold())
    french = sum(w in _FRENCH for w in words) > sum(w in _ENGLISH for w in words)
    return ANSWER_ONLY["fr" if french else "en"].format(letter=letter)


def with_context(question: str, context: dict, letter: str) -> str | None:
    """The question with the earlier parts before its own part, or None when its label is gone."""
    label = context["label"]
    at = question.rfind(f"\n{label} ")
    if at < 0 and question.startswith(f"{label} "):
        at = -1  # no stem: "(a) Prove X. (b) Prove Y."
    elif at < 0:
        return None
    head, own = question[: at + 1], question[at + 1 :]
    return f"{head}{context['earlier_parts']}\n{own.rstrip()}\n{answer_only(question, letter)}"


class PartContextConfig(StageConfig):
    pass


class PartContext(Stage):
    name = "part_context"
    version = "1"
    kind = "map"
    Config = PartContextConfig

    def process(self, record: Record, ctx: StageContext) -> Record | Drop:
        meta = json.loads(record.get("meta") or "{}")
        context = meta.get("context")
        if not context:
            return record
        question = with_context(record["question"], context, meta.get("part") or "")
        if question is None:
            return Drop("needs_context", f"leans on its earlier parts ({context['cue']!r}), and its question no longer "
                                         f"holds its label {context['label']!r} to put them before")
        return {**record, "question": question, "id": qa_id(question, record.get("answer") or "")}
