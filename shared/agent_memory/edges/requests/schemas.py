"""Pydantic mirrors of the request models, for what publishes their JSON schemas (OpenAPI, the tools' input
schemas) and for the test that holds validation.py to pydantic's answers.

A mirror is a pydantic model with the request model's name, docstring, fields (in the same order, with the
same defaults, descriptions and examples), methods and model validators, its Annotated metadata turned
into pydantic's own. Its validators are the request model's functions, their refusals re-raised as
pydantic's custom errors. Requests never come here: importing pydantic is what validation.py spares them.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema, WrapValidator
from pydantic import JsonValue as PydanticJsonValue
from pydantic import model_validator as pydantic_model_validator
from pydantic_core import PydanticCustomError

from agent_memory.edges.requests import validation as lite

STRICT = ConfigDict(strict=True, frozen=True, extra="forbid", defer_build=True)
# What a model class holds that is the request model's machinery, not something to carry to the mirror.
_MACHINERY = {
    "__module__",
    "__qualname__",
    "__doc__",
    "__dict__",
    "__weakref__",
    "__slots__",
    "__annotations__",
    "__own_fields__",
    "__built__",
    "model_config",
}


def _pydantic_error(err: lite.CodedError) -> PydanticCustomError:
    return PydanticCustomError(err.type, err.message_template, err.context)


# Pydantic reads a validator's signature to know how to call it: one wrapper per kind, spelled as it expects.
def _one(func: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(value: Any) -> Any:
        try:
            return func(value)
        except lite.CodedError as err:
            raise _pydantic_error(err) from None

    return run


def _wrapping(func: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def run(value: Any, handler: Any) -> Any:
        try:
            return func(value, handler)
        except lite.CodedError as err:
            raise _pydantic_error(err) from None

    return run


def _model_check(func: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(self: Any) -> Any:
        try:
            return func(self)
        except lite.CodedError as err:
            raise _pydantic_error(err) from None

    return run


def _metadata(meta: Any) -> Any:
    if isinstance(meta, lite.PlainValidator):
        return PlainValidator(_one(meta.func))
    if isinstance(meta, lite.WrapValidator):
        return WrapValidator(_wrapping(meta.func))
    if isinstance(meta, lite.AfterValidator):
        return AfterValidator(_one(meta.func))
    if isinstance(meta, lite.WithJsonSchema):
        return WithJsonSchema(meta.json_schema)
    if isinstance(meta, lite.FieldInfo):
        return Field(description=meta.description, examples=meta.examples)
    raise TypeError(f"no pydantic mirror for {meta!r}")


def annotation(ann: Any) -> Any:
    """An annotation of the request models as pydantic reads it."""
    if ann == lite.JsonValue:
        return PydanticJsonValue
    origin = get_origin(ann)
    if origin is Annotated:
        base, *metadata = get_args(ann)
        return Annotated[(annotation(base), *(_metadata(m) for m in metadata))]
    if origin in (Union, types.UnionType):
        return Union[tuple(annotation(a) for a in get_args(ann))]  # noqa: UP007 - built from a tuple
    if origin in (list, dict, tuple):
        return origin[tuple(annotation(a) for a in get_args(ann))]
    if isinstance(ann, type) and issubclass(ann, lite.Model):
        return mirror(ann)
    return ann


def _default(value: Any) -> Any:
    return mirror(type(value)).model_validate(value.model_dump()) if isinstance(value, lite.Model) else value


_MIRRORS: dict[type[lite.Model], type[BaseModel]] = {}


def mirror(model: type[lite.Model]) -> type[BaseModel]:
    """The pydantic model that stands for `model` where a schema is published (one per model, so a nested
    model is one definition in a schema)."""
    found = _MIRRORS.get(model)
    if found is None:
        found = _MIRRORS[model] = _mirrored(model)
    return found


def _mirrored(model: type[lite.Model]) -> type[BaseModel]:
    namespace: dict[str, Any] = {"model_config": STRICT, "__module__": model.__module__, "__doc__": model.__doc__}
    for klass in reversed(model.__mro__):
        if not issubclass(klass, lite.Model) or klass is lite.Model:
            continue
        for name, value in klass.__dict__.items():
            if name in _MACHINERY:
                continue
            if getattr(value, "__model_validator__", False):
                value = pydantic_model_validator(mode="after")(_model_check(value))
            namespace[name] = value
    annotations: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotations[name] = annotation(info.annotation)
        kwargs: dict[str, Any] = {}
        if info.description is not None:
            kwargs["description"] = info.description
        if info.examples is not None:
            kwargs["examples"] = info.examples
        if info.min_length is not None:
            kwargs["min_length"] = info.min_length
        if info.max_length is not None:
            kwargs["max_length"] = info.max_length
        if not info.is_required():
            kwargs["default"] = _default(info.default)
        if kwargs:
            namespace[name] = Field(**kwargs)
    namespace["__annotations__"] = annotations
    built = type(model.__name__, (BaseModel,), namespace)
    built.__qualname__ = model.__qualname__
    return built
