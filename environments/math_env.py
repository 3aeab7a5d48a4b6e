"""Math environment: the response must state a final answer (\\boxed{} by default); the task
reward is 1 when the answer checker finds it equivalent to the item's answer."""

from __future__ import annotations

from typing import Any

from rlclimb.schemas.records import QAItem

from .answer_check import check, extract_final_answer
from .base import Environment, Grade

SYSTEM = "You are a careful problem solver. Reason step by step, then give the final answer."
INSTRUCTION = "Put your final answer within \\boxed{}."


def as_item(task: Any) -> QAItem:
    return task if isinstance(task, QAItem) else QAItem.model_validate(task)


class MathEnvironment(Environment):
    kind = "math"

    def messages(self, task: Any) -> list[dict[str, str]]:
        item = as_item(task)
        question = item.question
        if item.choices:
            question += "\n" + "\n".join(f"{chr(65 + i)}. {c}" for i, c in enumerate(item.choices))
        system = self.options.get("system", SYSTEM)
        instruction = self.options.get("instruction", INSTRUCTION)
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": f"{question}\n\n{instruction}"},
        ]

    def grade(self, task: Any, completion: str) -> Grade:
        item = as_item(task)
        final = extract_final_answer(completion)
        if final is None:
            return Grade(task=0.0, formatted=False, detail="no final answer stated")
        verdict = check(item.answer, final, item.answer_type, choices=item.choices)
        return Grade(
            task=1.0 if verdict.equivalent else 0.0,
            formatted=True,
            detail=f"{verdict.method}: {final[:80]!r} vs {item.answer[:80]!r} {verdict.detail}".strip(),
        )
