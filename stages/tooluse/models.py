"""The shapes the synthesis LLM calls must return (validated; a reply that does not fit is
repaired once by the client, then ledgered as `llm_invalid_output`)."""

from __future__ import annotations

import keyword
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")
PARAM_TYPES = ("string", "integer", "number", "boolean")
# Python names for JSON types, as models often write them: read as meant, not sent back
TYPE_ALIASES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "text": "string"}


def _ident(value: str, what: str) -> str:
    if not IDENT.match(value) or keyword.iskeyword(value):
        raise ValueError(f"{what} {value!r} is not a lower_snake_case Python identifier")
    return value


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")  # models add fields we do not use: harmless


class EntitySpec(_Loose):
    name: str
    collection: str  # key of the state's top-level object holding these entities by id
    id_field: str
    fields: dict[str, str] = Field(default_factory=dict)  # field -> type

    _c = field_validator("collection", "id_field")(lambda v, info: _ident(v, info.field_name))


class ToolSpec(_Loose):
    name: str
    kind: Literal["read", "write"]
    description: str = ""
    parameters: dict[str, str] = Field(default_factory=dict)  # argument -> JSON type
    returns: list[str] = Field(default_factory=list)  # fields of the JSON the tool returns

    _n = field_validator("name")(lambda v: _ident(v, "tool name"))

    @field_validator("parameters")
    @classmethod
    def _params(cls, v: dict[str, str]) -> dict[str, str]:
        v = {name: TYPE_ALIASES.get(str(typ).lower(), str(typ).lower()) for name, typ in v.items()}
        for name, typ in v.items():
            _ident(name, "parameter")
            if typ not in PARAM_TYPES:
                raise ValueError(f"parameter {name}: type {typ!r} is not one of {', '.join(PARAM_TYPES)}")
        return v


class EnvDesign(_Loose):
    """Step 1 of bootstrap: the entity model and the tool list."""

    entities: list[EntitySpec] = Field(min_length=1)
    tools: list[ToolSpec] = Field(min_length=2)
    policy: str = ""
    personas: list[str] = Field(default_factory=list)

    @field_validator("tools")
    @classmethod
    def _unique(cls, v: list[ToolSpec]) -> list[ToolSpec]:
        names = [t.name for t in v]
        if len(set(names)) != len(names):
            raise ValueError(f"tool names repeat: {sorted(n for n in set(names) if names.count(n) > 1)}")
        return v


class Critique(_Loose):
    """A critique round: what is wrong with the implementation, and whether to revise."""

    issues: list[str] = Field(default_factory=list)
    verdict: Literal["ok", "revise"]


class Action(_Loose):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class TaskDraft(_Loose):
    """A task for one sampled chain: the entities it needs, its gold actions, the user request."""

    instruction: str = Field(min_length=8)
    actions: list[Action] = Field(min_length=1)
    outputs: list[str | int | float] = Field(default_factory=list)  # what the reply to the user must contain (numbers as text)
    new_entities: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)  # collection -> id -> entity


class NoToolDraft(_Loose):
    """A request the assistant answers from the policy or common knowledge, without a tool."""

    instruction: str = Field(min_length=8)
    outputs: list[str | int | float] = Field(default_factory=list)
