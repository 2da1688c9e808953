"""Request bodies of the memory doors' six verbs (every door shares them), of skills and of the block."""

from __future__ import annotations

from typing import Annotated, Any

from agent_memory.core.paths import MemoryPath, parse_document_path, parse_prefix
from agent_memory.domain.memory.block import DEFAULT_BUDGET_BYTES, MAX_BUDGET_BYTES
from agent_memory.edges.requests.base import (
    Body,
    Content,
    Counter,
    Flag,
    OptionalCounter,
    OptionalUuid,
    PairRule,
    coded,
    from_api_error,
    integer_schema,
    whole_number,
)
from agent_memory.edges.requests.validation import PlainValidator, WithJsonSchema

GREP_LIMIT_MAX = 500
VERSIONS_LIMIT_MAX = 100
VERSIONS_LIMIT_DEFAULT = 20


def _optional_prefix(value: Any) -> MemoryPath | None:
    return None if value is None else parse_prefix(value)


def _nonempty(value: Any) -> str:
    if not isinstance(value, str) or value == "":
        raise coded("parameter_invalid", "must be a nonempty string")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise coded("parameter_invalid", "must be a string")
    return value


def _description(value: Any) -> str | None:
    # Whether a description is allowed at all depends on the path (only a skill takes one): memory.py.
    if value is not None and not isinstance(value, str):
        raise coded("memory_description_invalid", "must be a string")
    return value


_TEXT = WithJsonSchema({"type": "string"})
DocumentPath = Annotated[
    MemoryPath,
    PlainValidator(from_api_error(parse_document_path)),
    WithJsonSchema({"type": "string", "examples": ["conversation/plan.md"]}),
]
OptionalPrefix = Annotated[
    MemoryPath | None,
    PlainValidator(from_api_error(_optional_prefix)),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "null"}]}),
]
Nonempty = Annotated[str, PlainValidator(_nonempty), WithJsonSchema({"type": "string", "minLength": 1})]
Text = Annotated[str, PlainValidator(_text), _TEXT]
Description = Annotated[
    str | None, PlainValidator(_description), WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "null"}]})
]
GrepLimit = Annotated[int, whole_number(1, GREP_LIMIT_MAX), integer_schema(1, GREP_LIMIT_MAX)]
VersionsLimit = Annotated[int, whole_number(1, VERSIONS_LIMIT_MAX), integer_schema(1, VERSIONS_LIMIT_MAX)]


def _cursor(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise coded("parameter_invalid", "must be the next_cursor string a listing answered, or null")
    return value


def _conflict_resolution(value: Any) -> str | None:
    if value is not None and value != "overwrite":
        raise coded("parameter_invalid", 'must be "overwrite" or left out')
    return None if value is None else "overwrite"


Cursor = Annotated[
    str | None, PlainValidator(_cursor), WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "null"}]})
]
ConflictResolution = Annotated[
    str | None,
    PlainValidator(_conflict_resolution),
    WithJsonSchema({"anyOf": [{"type": "string", "enum": ["overwrite"]}, {"type": "null"}]}),
]
BlockBudget = Annotated[int, whole_number(1, MAX_BUDGET_BYTES), integer_schema(1, MAX_BUDGET_BYTES)]


class Selector(Body):
    """What every memory verb may carry: the Speaker a speaker/ root means for this one request."""

    speaker_public_id: OptionalUuid = None


class MemoryShowFields(Selector):
    path: DocumentPath


class MemoryWriteFields(PairRule, Selector):
    path: DocumentPath
    expected_public_id: OptionalUuid
    expected_lock_version: OptionalCounter
    content: Content
    description: Description = None
    expected_context_revision: OptionalCounter = None
    # "overwrite": the writer saw a newer version and replaces it on purpose (recorded in the history).
    conflict_resolution: ConflictResolution = None

    @property
    def description_given(self) -> bool:
        return "description" in self.model_fields_set


class MemoryEditFields(PairRule, Selector):
    path: DocumentPath
    expected_public_id: OptionalUuid
    expected_lock_version: OptionalCounter
    old_text: Nonempty
    new_text: Content
    expected_context_revision: OptionalCounter = None


class MemoryDeleteFields(PairRule, Selector):
    path: DocumentPath
    expected_public_id: OptionalUuid
    expected_lock_version: OptionalCounter
    expected_context_revision: OptionalCounter = None


class MemoryGrepFields(Selector):
    pattern: Nonempty
    path: OptionalPrefix = None
    ignore_case: Flag = False
    limit: GrepLimit = 100


class MemoryVersionsFields(Selector):
    path: DocumentPath
    limit: VersionsLimit = VERSIONS_LIMIT_DEFAULT
    cursor: Cursor = None


class MemoryVersionShowFields(Selector):
    path: DocumentPath
    lock_version: Counter


class MemoryVersionChangeFields(PairRule, Selector):
    """Rollback and redaction: the version chosen, then the pair the caller read of the document."""

    path: DocumentPath
    lock_version: Counter
    expected_public_id: OptionalUuid
    expected_lock_version: OptionalCounter
    expected_context_revision: OptionalCounter = None


def _decision(value: Any) -> str:
    if value not in ("release", "reject"):
        raise coded("parameter_invalid", 'must be "release" or "reject"')
    return "release" if value == "release" else "reject"


Decision = Annotated[str, PlainValidator(_decision), WithJsonSchema({"type": "string", "enum": ["release", "reject"]})]


class ExportQuery(Body):
    cursor: Cursor = None


class MemoryReviewFields(PairRule, Selector):
    path: DocumentPath
    lock_version: Counter
    decision: Decision
    expected_public_id: OptionalUuid
    expected_lock_version: OptionalCounter


class MemoryReview(Body):
    memory: MemoryReviewFields


class PromoteSource(Selector):
    conversation_public_id: OptionalUuid = None
    path: DocumentPath
    lock_version: Counter


class PromoteFields(PairRule):
    source: PromoteSource
    target_path: DocumentPath
    expected_public_id: OptionalUuid
    expected_lock_version: OptionalCounter
    # Only for a skill the promote creates: the line a model reads to decide whether to load it.
    description: Description = None


class MemoryVersions(Body):
    memory: MemoryVersionsFields


class MemoryVersionShow(Body):
    memory: MemoryVersionShowFields


class MemoryVersionChange(Body):
    memory: MemoryVersionChangeFields


class Promote(Body):
    promote: PromoteFields


class MemoryShow(Body):
    memory: MemoryShowFields


class MemoryWrite(Body):
    memory: MemoryWriteFields


class MemoryEdit(Body):
    memory: MemoryEditFields


class MemoryDelete(Body):
    memory: MemoryDeleteFields


class MemoryGrep(Body):
    memory: MemoryGrepFields


class SkillLoadFields(Body):
    # The skill grammar (skills.py) judges the name once the caller is known.
    name: Text
    speaker_public_id: OptionalUuid = None


class SkillLoad(Body):
    skill: SkillLoadFields


class MemoryBlockFields(Body):
    budget_bytes: BlockBudget = DEFAULT_BUDGET_BYTES
    expected_context_revision: OptionalCounter = None
    speaker_public_id: OptionalUuid = None


class MemoryBlock(Body):
    memory_block: MemoryBlockFields
