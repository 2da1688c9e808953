"""Request models that validate without pydantic: the part of pydantic's model API the request bodies use.

A route's first request used to import pydantic and build its models' validators: about a sixth of a cold
start (docs/decisions.md). The bodies keep pydantic's spelling (`Annotated` types carrying `PlainValidator`,
`WrapValidator`, `AfterValidator`, `WithJsonSchema` and `Field`; `model_validator(mode="after")`) and the
same strict, closed semantics, so a rule is still written once; what they validate with is this module,
which imports nothing beyond the standard library. Published schemas (OpenAPI, the tools') still come from
pydantic, from a mirror of each model built where a schema is needed (edges/requests/schemas.py), and a
test holds this module's answers to the mirror's on every model.

Semantics kept from pydantic's strict mode: fields are validated in declaration order and every error is
collected (missing fields where they are declared, unknown fields after them); a field left out takes its
default unvalidated; model validators run after the fields, base classes' first, only when the fields
passed; `Annotated` metadata applies left to right, each plain validator replacing what came before, each
wrap validator wrapping it, each after validator following it. Errors carry pydantic's `type`, `loc`,
`msg` and `ctx`, so one mapper (base.py) reads both.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Annotated, Any, ClassVar, TypeVar, Union, get_args, get_origin

M = TypeVar("M", bound="Model")
Loc = tuple[int | str, ...]
Check = Callable[[Any], Any]


class CodedError(Exception):
    """A refusal a validator raises (pydantic's PydanticCustomError): `type` is the catalogue's code."""

    def __init__(self, type_: str, message_template: str, context: dict[str, Any] | None = None) -> None:
        super().__init__(message_template)
        self.type = type_
        self.message_template = message_template
        self.context = context or {}

    def message(self) -> str:
        return self.message_template.format(**self.context)


class ValidationError(ValueError):
    """Every error a validation met, in pydantic's shape."""

    def __init__(self, title: str, errors: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(errors)} validation error(s) for {title}")
        self.title = title
        self._errors = errors

    def errors(self, include_url: bool = False) -> list[dict[str, Any]]:
        return [dict(e) for e in self._errors]


class _Failed(Exception):
    """Errors met below a field, their locations relative to the value that failed."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors = errors


def _error(type_: str, msg: str, ctx: dict[str, Any] | None = None) -> _Failed:
    err: dict[str, Any] = {"type": type_, "loc": (), "msg": msg}
    if ctx:
        err["ctx"] = ctx
    return _Failed([err])


def _under(part: int | str, failed: _Failed) -> list[dict[str, Any]]:
    return [e | {"loc": (part, *e["loc"])} for e in failed.errors]


# ---- the metadata an Annotated type carries ---------------------------------------------------------------


class PlainValidator:
    """Validates the value alone: what came before it in the type is not run."""

    __slots__ = ("func",)

    def __init__(self, func: Callable[[Any], Any]) -> None:
        self.func = func


class WrapValidator:
    """Validates around what came before: `func(value, handler)`, the handler running the inner checks."""

    __slots__ = ("func",)

    def __init__(self, func: Callable[[Any, Callable[[Any], Any]], Any]) -> None:
        self.func = func


class AfterValidator:
    """Runs on what the checks before it answered."""

    __slots__ = ("func",)

    def __init__(self, func: Callable[[Any], Any]) -> None:
        self.func = func


class WithJsonSchema:
    """The JSON schema published for the type (validation ignores it)."""

    __slots__ = ("json_schema",)

    def __init__(self, json_schema: dict[str, Any]) -> None:
        self.json_schema = json_schema


_MISSING: Any = type("_MissingType", (), {"__repr__": lambda self: "MISSING"})()


class FieldInfo:
    """A field's declaration: its annotation (resolved when the model is first used), its default and what
    the schema says of it."""

    __slots__ = ("annotation", "default", "description", "examples", "max_length", "min_length")

    def __init__(
        self,
        default: Any = _MISSING,
        *,
        description: str | None = None,
        examples: list[Any] | None = None,
        min_length: int | None = None,
        max_length: int | None = None,
    ) -> None:
        self.default = default
        self.description = description
        self.examples = examples
        self.min_length = min_length
        self.max_length = max_length
        self.annotation: Any = None

    def is_required(self) -> bool:
        return self.default is _MISSING


def Field(
    default: Any = _MISSING,
    *,
    description: str | None = None,
    examples: list[Any] | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
) -> Any:
    return FieldInfo(default, description=description, examples=examples, min_length=min_length, max_length=max_length)


def model_validator(*, mode: str) -> Callable[[Callable[[Any], Any]], Any]:
    """A check of the whole model once its fields passed (`mode="after"`, the only mode used)."""
    if mode != "after":
        raise TypeError("only after-model validators are supported")

    def mark(func: Callable[[Any], Any]) -> Any:
        func.__model_validator__ = True  # type: ignore[attr-defined]
        return func

    return mark


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int, float, list, dict)):
        return value
    raise _error("invalid-json-value", "input was not a valid JSON value")


# A value of any JSON type (a request body holds nothing else).
JsonValue = Annotated[Any, PlainValidator(_json_value)]


# ---- turning an annotation into a check --------------------------------------------------------------------


def _call(func: Callable[..., Any], *args: Any) -> Any:
    """A validator's refusal as an error in pydantic's shape."""
    try:
        return func(*args)
    except _Failed:
        raise
    except CodedError as err:
        raise _error(err.type, err.message(), err.context) from None
    except ValidationError as err:
        raise _Failed(err.errors()) from None
    except ValueError as err:
        raise _error("value_error", f"Value error, {err}", {"error": err}) from None
    except AssertionError as err:
        raise _error("assertion_error", f"Assertion failed, {err}", {"error": err}) from None


def _is_str(value: Any) -> Any:
    if isinstance(value, str):
        return value
    raise _error("string_type", "Input should be a valid string")


def _is_int(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _error("int_type", "Input should be a valid integer")


def _is_bool(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    raise _error("bool_type", "Input should be a valid boolean")


def _is_none(value: Any) -> Any:
    if value is None:
        return value
    raise _error("none_required", "Input should be None")


def _anything(value: Any) -> Any:
    return value


_PLAIN: dict[Any, Check] = {str: _is_str, int: _is_int, bool: _is_bool, type(None): _is_none, Any: _anything}


def _optional(inner: Check) -> Check:
    def check(value: Any) -> Any:
        return None if value is None else inner(value)

    return check


def _list_of(item: Check) -> Check:
    def check(value: Any) -> Any:
        if not isinstance(value, list):
            raise _error("list_type", "Input should be a valid list")
        out, errors = [], []
        for i, v in enumerate(value):
            try:
                out.append(item(v))
            except _Failed as failed:
                errors += _under(i, failed)
        if errors:
            raise _Failed(errors)
        return out

    return check


def _dict_of(value_check: Check) -> Check:
    def check(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _error("dict_type", "Input should be a valid dictionary")
        out, errors = {}, []
        for k, v in value.items():
            try:
                out[_is_str(k)] = value_check(v)
            except _Failed as failed:
                errors += _under(k, failed)
        if errors:
            raise _Failed(errors)
        return out

    return check


def _nested(model: type[Model]) -> Check:
    def check(value: Any) -> Any:
        if isinstance(value, model):
            return value
        if not isinstance(value, dict):
            raise _error(
                "model_type",
                f"Input should be a valid dictionary or instance of {model.__name__}",
                {"class_name": model.__name__},
            )
        return model._validated(value)

    return check


def _with_metadata(base: Check | None, metadata: tuple[Any, ...], base_type: Any) -> Check:
    check = base
    for meta in metadata:
        if isinstance(meta, PlainValidator):
            check = _plain(meta.func)
        elif isinstance(meta, WrapValidator):
            check = _wrap(meta.func, _required(check, base_type))
        elif isinstance(meta, AfterValidator):
            check = _after(meta.func, _required(check, base_type))
        elif not isinstance(meta, (WithJsonSchema, FieldInfo)):
            raise TypeError(f"request models do not support the annotation {meta!r}")
    return _required(check, base_type)


def _required(check: Check | None, base_type: Any) -> Check:
    return check if check is not None else _compiled(base_type)


def _plain(func: Callable[[Any], Any]) -> Check:
    return lambda value: _call(func, value)


def _wrap(func: Callable[[Any, Callable[[Any], Any]], Any], inner: Check) -> Check:
    return lambda value: _call(func, value, inner)


def _after(func: Callable[[Any], Any], inner: Check) -> Check:
    return lambda value: _call(func, inner(value))


def _compiled(annotation: Any) -> Check:
    """The check of one annotation (a plain type, Optional, list, dict, a nested model, Annotated)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *metadata = get_args(annotation)
        # A plain validator replaces the base type's check: it is not built (it may be a type we never check).
        builds_base = not any(isinstance(m, PlainValidator) for m in metadata)
        return _with_metadata(_compiled(base) if builds_base else None, tuple(metadata), base)
    if origin in (Union, types.UnionType):
        members = get_args(annotation)
        others = [m for m in members if m is not type(None)]
        if len(others) == 1 and len(members) == 2:
            return _optional(_compiled(others[0]))
        raise TypeError(f"request models take only Optional unions, not {annotation!r}")
    if origin is list:
        (item,) = get_args(annotation) or (Any,)
        return _list_of(_compiled(item))
    if origin is dict:
        key, value = get_args(annotation) or (str, Any)
        if key is not str:
            raise TypeError(f"request models take only string keys, not {annotation!r}")
        return _dict_of(_compiled(value))
    if annotation is dict:
        return _dict_of(_anything)
    if isinstance(annotation, type) and issubclass(annotation, Model):
        return _nested(annotation)
    if annotation in _PLAIN:
        return _PLAIN[annotation]
    raise TypeError(f"request models do not support the type {annotation!r}")


def _sized(check: Check, info: FieldInfo) -> Check:
    """A string field's length bounds (`Field(min_length=.., max_length=..)`), after its type check."""
    low, high = info.min_length, info.max_length
    if low is None and high is None:
        return check

    def sized(value: Any) -> Any:
        value = check(value)
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate, which a bounded string refuses first
                raise _error(
                    "string_unicode", "Input should be a valid string, unable to parse raw data as a unicode string"
                ) from None
        if isinstance(value, str) and low is not None and len(value) < low:
            unit = "character" if low == 1 else "characters"
            raise _error("string_too_short", f"String should have at least {low} {unit}", {"min_length": low})
        if isinstance(value, str) and high is not None and len(value) > high:
            unit = "character" if high == 1 else "characters"
            raise _error("string_too_long", f"String should have at most {high} {unit}", {"max_length": high})
        return value

    return sized


# ---- the model ------------------------------------------------------------------------------------------


class _Built:
    """A model's fields and checks, resolved on first use (its annotations may name later classes)."""

    __slots__ = ("checks", "fields", "validators")

    def __init__(self, fields: dict[str, FieldInfo], checks: dict[str, Check], validators: list[Any]) -> None:
        self.fields, self.checks, self.validators = fields, checks, validators


_BUILDING = threading.RLock()


class Model:
    """A strict, closed, frozen request model (pydantic's BaseModel as the request bodies use it)."""

    __slots__ = ("__dict__", "model_fields_set")
    model_config: ClassVar[dict[str, Any]] = {}
    # pydantic's `model_fields`: {name: FieldInfo} in declaration order, resolved on first read (below).
    model_fields: ClassVar[dict[str, FieldInfo]]
    __built__: ClassVar[_Built | None] = None
    __own_fields__: ClassVar[dict[str, FieldInfo]]
    model_fields_set: set[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.__built__ = None
        # Defaults live in the declaration, not as class attributes an instance would read through.
        declared = inspect.get_annotations(cls)
        infos: dict[str, FieldInfo] = {}
        for name in declared:
            if name.startswith("_") or name in ("model_config", "model_fields", "model_fields_set"):
                continue
            given = cls.__dict__.get(name, _MISSING)
            info = given if isinstance(given, FieldInfo) else FieldInfo(given)
            infos[name] = info
            if given is not _MISSING:
                delattr(cls, name)
        cls.__own_fields__ = infos

    @classmethod
    def _built(cls) -> _Built:
        built: _Built | None = cls.__dict__.get("__built__")
        if built is not None:
            return built
        with _BUILDING:
            built = cls.__dict__.get("__built__")
            if built is None:
                built = cls._build()
                cls.__built__ = built
        return built

    @classmethod
    def _build(cls) -> _Built:
        fields: dict[str, FieldInfo] = {}
        validators: list[Any] = []
        for klass in reversed(cls.__mro__):
            if not (isinstance(klass, type) and issubclass(klass, Model)) or klass is Model:
                continue
            module = sys.modules[klass.__module__].__dict__
            declared = inspect.get_annotations(klass)
            for name, info in klass.__dict__.get("__own_fields__", {}).items():
                own = copy.copy(info)
                spelled = declared[name]
                # The modules spell annotations as strings (`from __future__ import annotations`).
                own.annotation = eval(spelled, module) if isinstance(spelled, str) else spelled
                fields.pop(name, None)
                fields[name] = own
            validators += [
                f for f in klass.__dict__.values() if getattr(f, "__model_validator__", False) and f not in validators
            ]
        # The order pydantic keeps: a redeclared field stays where its base first declared it.
        ordered: dict[str, FieldInfo] = {}
        for klass in reversed(cls.__mro__):
            for name in klass.__dict__.get("__own_fields__", {}):
                ordered.setdefault(name, fields[name])
        checks = {name: _sized(_compiled(info.annotation), info) for name, info in ordered.items()}
        return _Built(ordered, checks, validators)

    @classmethod
    def _validated(cls: type[M], data: dict[str, Any]) -> M:
        built = cls._built()
        values: dict[str, Any] = {}
        errors: list[dict[str, Any]] = []
        for name, info in built.fields.items():
            if name in data:
                try:
                    values[name] = built.checks[name](data[name])
                except _Failed as failed:
                    errors += _under(name, failed)
            elif info.is_required():
                errors.append({"type": "missing", "loc": (name,), "msg": "Field required"})
            else:
                # A mutable default is the instance's own, as pydantic gives it.
                default = info.default
                values[name] = copy.copy(default) if type(default) in (list, dict, set) else default
        for name in data:
            if name not in built.fields:
                errors.append({"type": "extra_forbidden", "loc": (name,), "msg": "Extra inputs are not permitted"})
        if errors:
            raise _Failed(errors)
        out = object.__new__(cls)
        out.__dict__.update(values)
        object.__setattr__(out, "model_fields_set", {n for n in data if n in built.fields})
        for check in built.validators:
            out = _call(check, out)
        return out

    @classmethod
    def model_validate(cls: type[M], data: Any) -> M:
        try:
            return _nested(cls)(data)  # type: ignore[no-any-return]
        except _Failed as failed:
            raise ValidationError(cls.__name__, failed.errors) from None

    def __init__(self, **data: Any) -> None:
        done = type(self).model_validate(data)
        self.__dict__.update(done.__dict__)
        object.__setattr__(self, "model_fields_set", done.model_fields_set)

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError(f"{type(self).__name__} is frozen: {name} cannot be assigned")

    def __delattr__(self, name: str) -> None:
        raise TypeError(f"{type(self).__name__} is frozen: {name} cannot be deleted")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({inner})"

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        yield from self.__dict__.items()

    def model_dump(self) -> dict[str, Any]:
        """The fields as plain values, nested models as dicts."""
        return {k: _dumped(v) for k, v in self.__dict__.items()}


def _dumped(value: Any) -> Any:
    if isinstance(value, Model):
        return value.model_dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a parsed path, as pydantic dumps it
        return {f.name: _dumped(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return type(value)(_dumped(v) for v in value)
    if isinstance(value, dict):
        return {k: _dumped(v) for k, v in value.items()}
    return value


class _ModelFields:
    """`Model.model_fields`, resolved on first read: {name: FieldInfo} in declaration order."""

    def __get__(self, instance: Any, owner: type[Model]) -> dict[str, FieldInfo]:
        return owner._built().fields


Model.model_fields = _ModelFields()  # type: ignore[assignment]
