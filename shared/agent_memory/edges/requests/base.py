"""The one validation system: field types that carry their refusal code, and one mapping to `ApiError`.

HTTP bodies and the model's tool inputs are request models (validation.py, pydantic's spelling without
pydantic) built from the types below, so a rule (what a
public id looks like, how big a version may be, that the expected pair is null together or set together)
is written once and refused with the same code through every door. Strict everywhere: "3" is not a
version and true is not a path.

A type whose refusal has its own code (a path, content, a description) raises `coded(...)`, and the
mapper turns the first error into that code; the model's own errors (missing, wrong type, unknown field)
become `parameter_missing` / `parameter_invalid`, an unknown field named with the one it may have meant.
The first error wins, in field order, which is the order a reader of the body meets them; an unknown
field wins over all, since a misspelled field is also a missing one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Annotated, Any, TypeVar, get_args

from agent_memory.api.contract import UUID_PATTERN
from agent_memory.api.errors import CATALOGUE, ApiError
from agent_memory.core.ids import is_uuid
from agent_memory.edges.requests.validation import (
    CodedError,
    Model,
    PlainValidator,
    ValidationError,
    WithJsonSchema,
    WrapValidator,
    model_validator,
)

# Versions and revisions stay far inside DynamoDB's 38-digit numbers and JSON's exact integers.
MAX_COUNTER = 2**53
SURROGATE = re.compile(r"[\ud800-\udfff]")

M = TypeVar("M", bound=Model)


# Strict everywhere, and closed (validation.Model): a misspelled or misplaced field is a mistake the caller
# should hear about (an ignored `answering_agent_id` would create a conversation with no agent and no error).
# The published schemas say the same, as `additionalProperties: false`. Each model's checks are built on its
# first use, not at import: a route's first request pays for its own model only.


class Body(Model):
    """An HTTP request section (or a route's query parameters, as the handler names them)."""


class ToolInput(Model):
    """A model tool's arguments."""


def coded(code: str, message: str, *, whole: bool = False) -> CodedError:
    """A validation error carrying a catalogued code. `message` is a predicate ("must be ...") that the
    mapper prefixes with the field's location, or with `whole` a complete sentence used as it is."""
    return CodedError(code, "{message}", {"message": message, "whole": whole})


def _checked(code: str, phrase: str, ok: Callable[[Any], bool], *, nullable: bool = False) -> WrapValidator:
    def check(value: Any, handler: Callable[[Any], Any]) -> Any:
        if not ((nullable and value is None) or ok(value)):
            raise coded(code, phrase)
        return handler(value)

    return WrapValidator(check)


def _nullable(schema: dict[str, Any]) -> WithJsonSchema:
    return WithJsonSchema({"anyOf": [schema, {"type": "null"}]})


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _whole_number(low: int, high: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


def _number_phrase(low: int, high: int) -> str:
    return f"must be a whole number from {low} to {high}"


def whole_number(low: int, high: int) -> WrapValidator:
    """An integer from low to high (a count or a budget): `Annotated[int, whole_number(..), integer_schema(..)]`."""
    return _checked("parameter_invalid", _number_phrase(low, high), _whole_number(low, high))


def integer_schema(low: int, high: int) -> WithJsonSchema:
    return WithJsonSchema({"type": "integer", "minimum": low, "maximum": high})


def _name_ok(limit: int) -> Callable[[Any], bool]:
    # A lone surrogate ("\ud800" in the JSON) is not text and cannot be stored as UTF-8.
    return lambda v: isinstance(v, str) and bool(v.strip()) and len(v) <= limit and not SURROGATE.search(v)


_UUID_SCHEMA = {"type": "string", "pattern": UUID_PATTERN, "examples": ["0193f0c2-a1b2-7c4e-8f5d-6a7b8c9d0e1f"]}
_UUID_PHRASE = "must be a lowercase UUID"
_COUNTER_SCHEMA = {"type": "integer", "minimum": 0, "maximum": MAX_COUNTER}
_COUNTER_PHRASE = _number_phrase(0, MAX_COUNTER)
_NAME_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 200}
_NAME_PHRASE = "must be a nonempty string of at most 200 characters"

Uuid = Annotated[str, _checked("parameter_invalid", _UUID_PHRASE, is_uuid), WithJsonSchema(_UUID_SCHEMA)]
OptionalUuid = Annotated[
    str | None, _checked("parameter_invalid", _UUID_PHRASE, is_uuid, nullable=True), _nullable(_UUID_SCHEMA)
]
# A lock_version or context_revision, as the writer read it.
OptionalCounter = Annotated[
    int | None,
    _checked("parameter_invalid", _COUNTER_PHRASE, _whole_number(0, MAX_COUNTER), nullable=True),
    _nullable(_COUNTER_SCHEMA),
]
# A version number the request names (it must be one): a whole number, never null.
Counter = Annotated[int, whole_number(0, MAX_COUNTER), integer_schema(0, MAX_COUNTER)]
Flag = Annotated[bool, _checked("parameter_invalid", "must be true or false", lambda v: isinstance(v, bool))]
Name = Annotated[str, _checked("parameter_invalid", _NAME_PHRASE, _name_ok(200)), WithJsonSchema(_NAME_SCHEMA)]
OptionalName = Annotated[
    str | None, _checked("parameter_invalid", _NAME_PHRASE, _name_ok(200), nullable=True), _nullable(_NAME_SCHEMA)
]
Content = Annotated[str, _checked("memory_content_invalid", "must be a string of text", _is_text)]
_PATH_PHRASE = "must be a string such as 'conversation/plan.md'"
PathText = Annotated[str, _checked("memory_path_invalid", _PATH_PHRASE, _is_text)]
OptionalPathText = Annotated[str | None, _checked("memory_path_invalid", _PATH_PHRASE, _is_text, nullable=True)]


def _json_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise coded("parameter_invalid", "must be a JSON object")
    return value


# A JSON object whose members something later judges (overrides, a tool's own arguments).
JsonObject = Annotated[dict[str, Any], PlainValidator(_json_object), WithJsonSchema({"type": "object"})]


def from_api_error(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Run a domain parser inside validation, keeping the code and sentence of its refusal."""

    def run(value: Any) -> Any:
        try:
            return parse(value)
        except ApiError as err:
            raise coded(err.code, err.message, whole=True) from err

    return run


class PairRule(Model):
    """The conditional-write rule, once: expected_public_id and expected_lock_version are null together
    (create only if absent) or set together (the version the writer read).

    Each model declares the two fields itself (as `OptionalUuid` and `OptionalCounter`) after its own, so
    a body is read in the order a person writes it: the path first, then the expectation.
    """

    @model_validator(mode="after")
    def _pair(self) -> PairRule:
        if (getattr(self, "expected_public_id", None) is None) != (
            getattr(self, "expected_lock_version", None) is None
        ):
            raise coded(
                "parameter_invalid",
                "expected_public_id and expected_lock_version are null together or set together",
                whole=True,
            )
        return self

    @property
    def expected(self) -> tuple[str, int] | None:
        """The pair the writer read, or None for "this path must be absent"."""
        pid: str | None = getattr(self, "expected_public_id", None)
        lv: int | None = getattr(self, "expected_lock_version", None)
        if pid is None or lv is None:
            return None
        return pid, lv


def _where(prefix: str, loc: tuple[int | str, ...]) -> str:
    """A location as a reader writes it: `memory.bindings[0].access`."""
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _model_in(annotation: Any) -> type[Model] | None:
    """The model a field holds, through Optional, list and Annotated."""
    if isinstance(annotation, type) and issubclass(annotation, Model):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _model_at(model: type[Model] | None, loc: tuple[int | str, ...]) -> type[Model] | None:
    """The model of the object at `loc` (the parent of an unknown field), or None where unknown."""
    for part in loc:
        if model is None:
            return None
        if isinstance(part, str):
            info = model.model_fields.get(part)
            model = None if info is None else _model_in(info.annotation)
    return model


def _homes(model: type[Model] | None, name: str) -> list[str]:
    """Where a misplaced field belongs: the fields of `model` holding an object that takes `name`."""
    if model is None:
        return []
    out = []
    for field, info in model.model_fields.items():
        inner = _model_in(info.annotation)
        if inner is not None and name in inner.model_fields:
            out.append(f"{field}.{name}")
    return out


def unknown_field(where: str, fields: list[str], homes: tuple[str, ...] = ()) -> ApiError:
    """The refusal of a field no model takes: its name, and how to fix it (where it belongs, the near
    miss, or the fields taken there)."""
    name = where.rsplit(".", 1)[-1].rsplit("]", 1)[-1]
    near = difflib.get_close_matches(name, fields, n=1, cutoff=0.6)
    if homes:
        fix = f"did you mean `{homes[0]}`? It belongs inside `{homes[0].rsplit('.', 1)[0]}`."
    elif near:
        fix = f"did you mean `{near[0]}`?"
    elif fields:
        fix = f"remove it; the fields taken here are: {', '.join(fields)}."
    else:
        fix = "remove it; this object takes no fields."
    return ApiError("parameter_invalid", f"There is no field `{where}`: {fix}")


def api_error(exc: ValidationError, prefix: str = "", model: type[Model] | None = None) -> ApiError:
    """The first validation error as the catalogue's refusal, naming where in the body it is. With the
    model validated, an unknown field's refusal names the fields it could have meant."""
    errors = exc.errors(include_url=False)
    # A misspelled field is also a missing one; the misspelling is the error worth naming.
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    where = _where(prefix, tuple(err["loc"])) or "the body"
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if kind in CATALOGUE:
        message = str(ctx.get("message", err["msg"]))
        return ApiError(kind, message if ctx.get("whole") else f"{where} {message}.")
    if kind == "missing":
        return ApiError("parameter_missing", f"{where} is required.")
    if kind == "extra_forbidden":
        parent = _model_at(model, tuple(err["loc"])[:-1])
        fields = [] if parent is None else list(parent.model_fields)
        return unknown_field(where, fields, tuple(_homes(parent, str(err["loc"][-1]))))
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return ApiError("parameter_invalid", f"{where} must be a JSON object.")
    return ApiError("parameter_invalid", f"{where}: {err['msg']}.")


def parse(model: type[M], data: Any, prefix: str = "") -> M:
    """Validate `data` as `model`, or raise the refusal its first error names."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise api_error(exc, prefix, model) from None
