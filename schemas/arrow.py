"""Arrow schemas derived from the pydantic record models."""

from __future__ import annotations

import types
import typing
from datetime import datetime
from functools import cache
from typing import Any, Literal, Union

import pyarrow as pa
from pydantic import BaseModel

_SCALARS: dict[Any, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
    bytes: pa.binary(),
    datetime: pa.timestamp("us", tz="UTC"),
}


def arrow_type(annotation: Any) -> tuple[pa.DataType, bool]:
    """Arrow type of a Python annotation, and whether it is nullable."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unions other than Optional[X] have no Arrow type: {annotation}")
        return arrow_type(args[0])[0], True
    if origin is Literal:
        kinds = {type(a) for a in typing.get_args(annotation)}
        if len(kinds) != 1:
            raise TypeError(f"mixed-type Literal: {annotation}")
        return _SCALARS[kinds.pop()], False
    if origin is list:
        (item,) = typing.get_args(annotation)
        return pa.list_(arrow_type(item)[0]), False
    if origin is dict:  # Hugging Face `datasets` cannot load Arrow maps: every output must load there
        raise TypeError(f"no map fields in records ({annotation}): use a list of structs or a struct")
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pa.struct(list(model_fields(annotation))), False
    if annotation in _SCALARS:
        return _SCALARS[annotation], False
    raise TypeError(f"no Arrow type for {annotation!r}")


def model_fields(model: type[BaseModel]):
    hints = typing.get_type_hints(model)
    for name, field in model.model_fields.items():
        dtype, nullable = arrow_type(hints[name])
        yield pa.field(name, dtype, nullable=nullable or not field.is_required())


@cache
def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    return pa.schema(list(model_fields(model)), metadata={"rlclimb.record": model.__name__})
