"""The model's tool inputs. Their JSON schemas are what a runtime hands the model (tools.py), so what the
model is told and what the service accepts are one definition, validated with the HTTP bodies' types."""

from __future__ import annotations

from typing import Annotated

from agent_memory.edges.requests.base import (
    Content,
    Flag,
    OptionalCounter,
    OptionalPathText,
    OptionalUuid,
    PairRule,
    PathText,
    ToolInput,
    integer_schema,
    whole_number,
)
from agent_memory.edges.requests.memory import VERSIONS_LIMIT_DEFAULT, VERSIONS_LIMIT_MAX, Cursor
from agent_memory.edges.requests.records import (
    CursorText,
    Facet,
    Instant,
    Labels,
    Limit,
    Query,
    RecordContent,
    RecordType,
    RunId,
    SourceKind,
    SourceRef,
    UserId,
    Visibility,
    WorkspaceRecordType,
    check_validity,
)
from agent_memory.edges.requests.validation import Field, model_validator

_PATH_HELP = (
    "A memory path that starts with its root, such as 'conversation/plan.md'. Roots: conversation/ (this "
    "conversation only), workspace/ (everyone in the room), agent/ (your own notes, in every conversation), "
    "speaker/ (your notes about the person you are talking with), plus any other root memory_ls shows. Or an "
    "absolute path to a file inside one of this execution's mounts, such as '/workspace/runbooks/deploy.md', "
    "'/memory/agent/notes.md' or '/memory/<memory-name>/notes.md' (memory_ls lists the mounts)."
)
_PID_HELP = (
    "The public_id from your latest memory_read or memory_ls of this document, or null to create a document "
    "that does not exist yet."
)
_LV_HELP = (
    "The lock_version from your latest memory_read or memory_ls of this document, or null to create a "
    "document that does not exist yet."
)


_KEY_HELP = (
    "Optional: a key of your own for this change, 1 to 128 printable ASCII characters (your tool call's id "
    "will do). The same call sent again with the same key is applied once and answers as it did the first time."
)

# A tool that changes something takes the call's Idempotency-Key among its arguments too. The entries take
# it out before the tool reads them (core/idempotency.py `one_key`): the field only tells the model of it.
KeyArgument = Annotated[str | None, Field(description=_KEY_HELP)]


class MemoryLsInput(ToolInput):
    path: OptionalPathText = Field(
        default=None,
        description="Optional: list only one root or folder, such as 'workspace/' or 'conversation/notes/', or a "
        "folder of this execution's mounts by absolute path, such as '/workspace/runbooks' ('/' lists every "
        "mount's files). Leave it out to list the roots, the mounts and the roots' documents.",
    )


class MemoryReadInput(ToolInput):
    path: PathText = Field(description=_PATH_HELP)


class MemoryWriteInput(PairRule, ToolInput):
    path: PathText = Field(description=_PATH_HELP)
    content: Content = Field(
        description="The whole new text of the document (markdown, at most 64 KiB; 1 MiB in a mounted Memory)."
    )
    expected_public_id: OptionalUuid = Field(description=_PID_HELP)
    expected_lock_version: OptionalCounter = Field(description=_LV_HELP)
    idempotency_key: KeyArgument = None


class MemoryEditInput(PairRule, ToolInput):
    path: PathText = Field(description=_PATH_HELP)
    old_text: str = Field(description="One exact passage of the current text; it must occur exactly once.")
    new_text: Content = Field(description="The text that replaces old_text (may be empty to remove it).")
    expected_public_id: OptionalUuid = Field(description=_PID_HELP)
    expected_lock_version: OptionalCounter = Field(description=_LV_HELP)
    idempotency_key: KeyArgument = None


class MemoryDeleteInput(PairRule, ToolInput):
    path: PathText = Field(description=_PATH_HELP)
    expected_public_id: OptionalUuid = Field(description=_PID_HELP)
    expected_lock_version: OptionalCounter = Field(description=_LV_HELP)
    idempotency_key: KeyArgument = None


class MemoryHistoryInput(ToolInput):
    path: PathText = Field(description=_PATH_HELP)
    limit: Annotated[int, whole_number(1, VERSIONS_LIMIT_MAX), integer_schema(1, VERSIONS_LIMIT_MAX)] = Field(
        default=VERSIONS_LIMIT_DEFAULT, description="How many versions to list, newest first (1 to 100)."
    )
    cursor: Cursor = Field(
        default=None, description="Optional: the next_cursor of an earlier memory_history call, for older versions."
    )


class SkillInput(ToolInput):
    name: str = Field(description="The skill's name exactly as your skills list shows it, such as 'pdf-forms'.")


# ---- typed records: the HTTP bodies' field types, so a tool's bounds are the route's ----------------------

_TYPE_HELP = (
    "What kind of fact it is: decision (we chose X because Y), correction (X was wrong, Y is right), "
    "violation (a rule was broken), solution (an approved fix), file (an important file and what it is for), "
    "preference (how someone wants things), or fact."
)


class MemoryAppendInput(ToolInput):
    content: RecordContent = Field(
        description="One piece of information, in your own words (at most 16 KiB); for example 'We chose X because Y'."
    )
    type: WorkspaceRecordType = Field(description=_TYPE_HELP)
    facet: Facet | None = Field(
        default=None, description="Optional: the subject it belongs to, such as 'billing'; duplicates merge within it."
    )
    labels: Labels = Field(default=(), description="Optional: up to 16 short labels to find it by.")
    visibility: Visibility = Field(
        default="workspace",
        description="workspace (everyone in the room reads it) or private (only you, the principal of this run).",
    )
    user_id: UserId | None = Field(default=None, description="Optional: the end user it is about.")
    supersedes: OptionalUuid = Field(
        default=None,
        description="Optional: the public_id of a record this one replaces; that record drops out of search at once.",
    )
    valid_from: Instant | None = Field(default=None, description="Optional: when it starts to hold (ISO 8601).")
    valid_to: Instant | None = Field(
        default=None, description="Optional: when it stops holding (ISO 8601); it then drops out of search."
    )
    run_id: RunId | None = Field(default=None, description="Optional: the run or task it came from.")
    source_kind: SourceKind | None = Field(
        default=None, description="Optional: where it came from (default agent for an agent, user for a person)."
    )
    source_ref: SourceRef | None = Field(
        default=None, description="Optional: what it came from, such as a pull request or a message id."
    )
    observed_at: Instant | None = Field(default=None, description="Optional: when it was observed (ISO 8601).")
    idempotency_key: KeyArgument = None

    @model_validator(mode="after")
    def _validity(self) -> MemoryAppendInput:
        check_validity(self.valid_from, self.valid_to, "")
        return self


class MemorySearchInput(ToolInput):
    query: Query = Field(description="The words to look for; records are ranked by how well they match them.")
    type: RecordType | None = Field(default=None, description="Optional: only records of this type.")
    facet: Facet | None = Field(default=None, description="Optional: only records of this facet.")
    run_id: RunId | None = Field(default=None, description="Optional: only records of this run.")
    user_id: UserId | None = Field(default=None, description="Optional: only records about this end user.")
    include_superseded: Flag = Field(
        default=False, description="Also list records a newer one superseded (each names its successor)."
    )
    include_expired: Flag = Field(default=False, description="Also list records whose valid_to has passed.")
    limit: Limit = Field(default=20, description="How many records to list, best first (1 to 100).")
    cursor: CursorText | None = Field(
        default=None, description="Optional: the next_cursor of an earlier memory_search with the same filters."
    )
