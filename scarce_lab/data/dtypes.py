"""polars dtypes derived from the pydantic payload models (one column per field)."""

from __future__ import annotations

import types
import typing
from enum import Enum
from typing import Any

import polars as pl
from pydantic import BaseModel


def polars_dtype(annotation: Any) -> pl.DataType:
    """The polars dtype of a payload field's annotation (int -> Int64, float ->
    Float64, str/Literal/Enum -> String, bool -> Boolean, ``X | None`` -> X, ``list[X]``
    -> List, a pydantic model -> Struct).

    Raises:
        TypeError: an annotation the contract does not allow (e.g. a dict).
    """
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"payload field type {annotation!r}: only 'X | None' unions are allowed")
        return polars_dtype(args[0])
    if origin is typing.Literal:
        return pl.String
    if origin is list:
        (item,) = typing.get_args(annotation)
        return pl.List(polars_dtype(item))
    if isinstance(annotation, type):
        if issubclass(annotation, bool):
            return pl.Boolean
        if issubclass(annotation, int):
            return pl.Int64
        if issubclass(annotation, float):
            return pl.Float64
        if issubclass(annotation, str | Enum):
            return pl.String
        if issubclass(annotation, BaseModel):
            return pl.Struct(model_schema(annotation))
    raise TypeError(f"payload field type {annotation!r} has no fixed polars type (dicts are not allowed)")


def model_schema(model: type[BaseModel], *, exclude: tuple[str, ...] = ()) -> dict[str, pl.DataType]:
    """``field -> polars dtype`` for a pydantic model (see :func:`polars_dtype`)."""
    return {
        name: polars_dtype(f.annotation)
        for name, f in model.model_fields.items()
        if name not in exclude
    }
