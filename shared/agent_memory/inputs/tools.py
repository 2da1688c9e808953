"""The model's tool inputs. Their JSON schemas are what a runtime hands the model (tools.py), so what the
model is told and what the service accepts are one definition, validated with the HTTP bodies' types."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .base import (
    Content,
    OptionalCounter,
    OptionalPathText,
    OptionalUuid,
    PairRule,
    PathText,
    ToolInput,
    integer_schema,
    whole_number,
)
from .memory import VERSIONS_LIMIT_DEFAULT, VERSIONS_LIMIT_MAX, Cursor

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
    content: Content = Field(description="The whole new text of the document (markdown, at most 64 KiB).")
    expected_public_id: OptionalUuid = Field(description=_PID_HELP)
    expected_lock_version: OptionalCounter = Field(description=_LV_HELP)


class MemoryEditInput(PairRule, ToolInput):
    path: PathText = Field(description=_PATH_HELP)
    old_text: str = Field(description="One exact passage of the current text; it must occur exactly once.")
    new_text: Content = Field(description="The text that replaces old_text (may be empty to remove it).")
    expected_public_id: OptionalUuid = Field(description=_PID_HELP)
    expected_lock_version: OptionalCounter = Field(description=_LV_HELP)


class MemoryDeleteInput(PairRule, ToolInput):
    path: PathText = Field(description=_PATH_HELP)
    expected_public_id: OptionalUuid = Field(description=_PID_HELP)
    expected_lock_version: OptionalCounter = Field(description=_LV_HELP)


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
