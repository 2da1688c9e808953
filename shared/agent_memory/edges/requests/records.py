"""Request bodies of typed records (records.py holds their rules).

Refusals follow one line: a field of the wrong JSON type, a missing required field or an instant that is
not ISO 8601 is 400 (`parameter_invalid` / `parameter_missing`); a value of the right type outside what
the contract allows (an unknown type or layer, text past its bound, `raw` outside the Session layer) is
422 `validation_failed`. `valid_to` before `valid_from` is 400, as the contract says.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from agent_memory.core import clock
from agent_memory.core.model import MAX_LABEL_CHARS, MAX_RECORD_BYTES, MAX_RECORD_LABELS, RECORD_TYPES, SOURCE_KINDS
from agent_memory.edges.requests.base import (
    SURROGATE,
    Body,
    Counter,
    Flag,
    OptionalUuid,
    coded,
    integer_schema,
    whole_number,
)
from agent_memory.edges.requests.validation import Field, PlainValidator, WithJsonSchema, model_validator

MAX_RUN_ID = 128
MAX_USER_ID = 128
MAX_SOURCE_REF = 512
MAX_FACET = 64
MAX_QUERY = 1024
MAX_INSTRUCTIONS = 4096
LAYERS = ("Workspace", "Session")
# What the Workspace layer takes: `raw` lines belong to a run's Session layer, for consolidation.
WORKSPACE_RECORD_TYPES = tuple(t for t in RECORD_TYPES if t != "raw")
VISIBILITIES = ("workspace", "private")
DECISIONS = ("release", "reject")


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise coded("parameter_invalid", "must be a string")
    if SURROGATE.search(value):
        raise coded("parameter_invalid", "must be text (it holds a lone surrogate)")
    return value


def _bounded(limit: int, *, what: str = "characters") -> Callable[[Any], str]:
    def check(value: Any) -> str:
        text = _string(value)
        if not text.strip():
            raise coded("validation_failed", "must not be empty")
        size = len(text.encode("utf-8")) if what == "bytes" else len(text)
        if size > limit:
            raise coded("validation_failed", f"must be at most {limit} {what}, not {size}")
        return text

    return check


def _choice(options: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        text = _string(value)
        if text not in options:
            raise coded("validation_failed", f"must be one of {', '.join(options)}, not {text[:64]!r}")
        return text

    return check


def _instant(value: Any) -> str:
    """An ISO 8601 date or date-time, kept as UTC ('Z'); a time without an offset is read as UTC."""
    text = _string(value)
    try:
        return clock.iso(clock.parse_iso(text))
    except ValueError:
        raise coded("parameter_invalid", f"must be an ISO 8601 date or date-time, not {text[:64]!r}") from None


def _schema(limit: int, description: str, *, what: str = "characters") -> WithJsonSchema:
    schema: dict[str, Any] = {"type": "string", "minLength": 1, "description": description}
    schema["maxLength" if what == "characters" else "x-maxBytes"] = limit
    return WithJsonSchema(schema)


def _enum_schema(options: tuple[str, ...]) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "enum": list(options)})


RecordContent = Annotated[
    str,
    PlainValidator(_bounded(MAX_RECORD_BYTES, what="bytes")),
    _schema(MAX_RECORD_BYTES, "the record's text, at most 16 KiB of UTF-8", what="bytes"),
]
RecordType = Annotated[str, PlainValidator(_choice(RECORD_TYPES)), _enum_schema(RECORD_TYPES)]
# The type of an append that can only land in the Workspace layer (a model's memory_append): its schema
# never offers `raw`, and `raw` is refused as any other unknown type is, validation_failed.
WorkspaceRecordType = Annotated[
    str, PlainValidator(_choice(WORKSPACE_RECORD_TYPES)), _enum_schema(WORKSPACE_RECORD_TYPES)
]
Layer = Annotated[str, PlainValidator(_choice(LAYERS)), _enum_schema(LAYERS)]
SourceKind = Annotated[str, PlainValidator(_choice(SOURCE_KINDS)), _enum_schema(SOURCE_KINDS)]
Visibility = Annotated[str, PlainValidator(_choice(VISIBILITIES)), _enum_schema(VISIBILITIES)]
Decision = Annotated[str, PlainValidator(_choice(DECISIONS)), _enum_schema(DECISIONS)]
QuarantineFilter = Annotated[str, PlainValidator(_choice(("pending",))), _enum_schema(("pending",))]
RunId = Annotated[str, PlainValidator(_bounded(MAX_RUN_ID)), _schema(MAX_RUN_ID, "the run the record came from")]
UserId = Annotated[str, PlainValidator(_bounded(MAX_USER_ID)), _schema(MAX_USER_ID, "the end user it is about")]
SourceRef = Annotated[
    str, PlainValidator(_bounded(MAX_SOURCE_REF)), _schema(MAX_SOURCE_REF, "where it came from: a PR, a message id")
]
Facet = Annotated[str, PlainValidator(_bounded(MAX_FACET)), _schema(MAX_FACET, "what duplicates are checked within")]
Query = Annotated[str, PlainValidator(_bounded(MAX_QUERY)), _schema(MAX_QUERY, "the words to rank records by")]
Instructions = Annotated[
    str,
    PlainValidator(_bounded(MAX_INSTRUCTIONS)),
    _schema(MAX_INSTRUCTIONS, "what to extract (read by a model-backed extractor only)"),
]
CursorText = Annotated[str, PlainValidator(_bounded(512)), _schema(512, "the next_cursor a search answered")]
Instant = Annotated[
    str, PlainValidator(_instant), WithJsonSchema({"type": "string", "description": "ISO 8601 date or date-time"})
]


def _labels(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise coded("parameter_invalid", "must be a list of strings")
    if len(value) > MAX_RECORD_LABELS:
        raise coded("validation_failed", f"must hold at most {MAX_RECORD_LABELS} labels, not {len(value)}")
    out: list[str] = []
    for i, label in enumerate(value):
        if not isinstance(label, str):
            raise coded("parameter_invalid", f"[{i}] must be a string")
        if not label.strip() or len(label) > MAX_LABEL_CHARS or SURROGATE.search(label):
            raise coded("validation_failed", f"[{i}] must be a nonempty label of at most {MAX_LABEL_CHARS} characters")
        if label not in out:
            out.append(label)
    return tuple(out)


Labels = Annotated[
    tuple[str, ...],
    PlainValidator(_labels),
    WithJsonSchema(
        {
            "type": "array",
            "maxItems": MAX_RECORD_LABELS,
            "items": {"type": "string", "minLength": 1, "maxLength": MAX_LABEL_CHARS},
        }
    ),
]


def check_validity(valid_from: str | None, valid_to: str | None, spelled: str) -> None:
    """`valid_to` before `valid_from` is 400, however the request spells the two fields."""
    if valid_from is not None and valid_to is not None and valid_to < valid_from:
        # Both are normalised to the same UTC spelling, so the strings compare as the instants do.
        raise coded("parameter_invalid", f"{spelled}valid_to must not be before {spelled}valid_from.", whole=True)


class Tags(Body):
    facet: Facet | None = None
    labels: Labels = ()


class AppendFields(Body):
    content: RecordContent
    type: RecordType
    layer: Layer = "Workspace"
    run_id: RunId | None = None
    tags: Tags | None = None
    source_kind: SourceKind | None = None
    source_ref: SourceRef | None = None
    visibility: Visibility = "workspace"
    user_id: UserId | None = None
    observed_at: Instant | None = None
    valid_from: Instant | None = None
    valid_to: Instant | None = None
    supersedes: OptionalUuid = None

    @model_validator(mode="after")
    def _rules(self) -> AppendFields:
        if self.type == "raw" and self.layer != "Session":
            raise coded("validation_failed", "record.type 'raw' is taken only by the Session layer.", whole=True)
        check_validity(self.valid_from, self.valid_to, "record.")
        return self


class AppendRecord(Body):
    record: AppendFields


class UpdateFields(Body):
    content: RecordContent | None = None
    tags: Tags | None = None
    expected_lock_version: Counter


class UpdateRecord(Body):
    record: UpdateFields


class DeleteFields(Body):
    expected_lock_version: Counter


class DeleteRecord(Body):
    record: DeleteFields


class ReviewFields(Body):
    decision: Decision


class ReviewRecord(Body):
    review: ReviewFields


Limit = Annotated[int, whole_number(1, 100), integer_schema(1, 100)]


class SearchFields(Body):
    query: Query | None = Field(default=None, examples=["which deploy day did we agree on"])
    type: RecordType | None = None
    facet: Facet | None = None
    layer: Layer = "Workspace"
    run_id: RunId | None = None
    user_id: UserId | None = None
    include_superseded: Flag = False
    include_expired: Flag = False
    quarantine: QuarantineFilter | None = None
    limit: Limit = 20
    cursor: CursorText | None = None

    @model_validator(mode="after")
    def _query(self) -> SearchFields:
        if self.query is None and self.quarantine is None:
            raise coded(
                "parameter_missing", "search.query is required (only a quarantine filter goes without).", whole=True
            )
        return self


class SearchRecords(Body):
    search: SearchFields


class ConsolidateFields(Body):
    run_id: RunId
    extraction_instructions: Instructions | None = None


class ConsolidateRecords(Body):
    consolidate: ConsolidateFields


__all__ = [
    "AppendRecord",
    "ConsolidateRecords",
    "DeleteRecord",
    "ReviewRecord",
    "SearchRecords",
    "UpdateRecord",
]
