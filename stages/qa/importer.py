"""Import QA dump rows ({"file", "line", "data"} from the JSONL reader) as QA item records."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from rlclimb.pipelines.stage import Drop, Record, Stage, StageConfig, StageContext
from rlclimb.schemas.records import QAItem, Source

QUESTION_FIELDS = ("question", "problem", "prompt", "query", "input", "q")
ANSWER_FIELDS = ("answer", "final_answer", "target", "output", "label", "a")
SOLUTION_FIELDS = ("solution", "rationale", "explanation")


class ImportQAConfig(StageConfig):
    question_field: str | None = None  # dotted path ("data.problem"); None = first common name found
    answer_field: str | None = None
    solution_field: str | None = None
    license: str | None = None  # recorded in every item's source block


def get_path(obj: dict, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(obj, dict) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


_MISSING = object()


def _as_text(value: Any) -> str | None:
    """Answers are often numbers in dumps; keep them as their JSON text. Containers are not text."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return None


class ImportQA(Stage):
    name = "import"
    version = "1"
    kind = "map"
    Config = ImportQAConfig
    output_model = QAItem

    def _field(self, data: dict, explicit: str | None, candidates: tuple[str, ...], what: str) -> tuple[str | None, Any]:
        if explicit:
            return explicit, get_path(data, explicit)
        for name in candidates:
            if name in data:
                return name, data[name]
        return None, _MISSING

    def process(self, record: Record, ctx: StageContext) -> Record | Drop:
        data = record["data"]
        fields_present = ", ".join(sorted(data)[:12]) or "none"
        q_name, q = self._field(data, self.config.question_field, QUESTION_FIELDS, "question")
        a_name, a = self._field(data, self.config.answer_field, ANSWER_FIELDS, "answer")
        for what, name, value in (("question", q_name, q), ("answer", a_name, a)):
            if value is _MISSING or value is None:
                looked = f"'{name}'" if name else "/".join(QUESTION_FIELDS if what == "question" else ANSWER_FIELDS)
                return Drop(
                    f"missing_{what}",
                    f"no {what} field (looked for {looked}; fields present: {fields_present}); "
                    f"set --set import.{what}_field=NAME to the field that holds the {what}",
                )
        question, answer = _as_text(q), _as_text(a)
        if question is None or answer is None:
            bad = q_name if question is None else a_name
            return Drop("bad_field_type", f"field '{bad}' is a {type(q if question is None else a).__name__}, expected text")
        s_name, s = self._field(data, self.config.solution_field, SOLUTION_FIELDS, "solution")
        solution = _as_text(s) if s is not _MISSING and s is not None else None
        used = {q_name, a_name, s_name if solution is not None else None}
        meta = {k: v for k, v in data.items() if k not in used}
        try:
            item = QAItem(
                question=question,
                answer=answer,
                solution=solution,
                meta=json.dumps(meta, ensure_ascii=False, sort_keys=True, default=str),
                source=Source(document=record["file"], line=record["line"],
                              license=record.get("license") or self.config.license),  # sidecar FILE.license first
            )
        except ValidationError as e:
            return Drop("invalid_record", str(e).replace("\n", " ")[:500])
        return item.model_dump()
