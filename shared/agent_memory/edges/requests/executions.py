"""Request bodies of executions and tool calls."""

from __future__ import annotations

from typing import Annotated, Any

from agent_memory.api.contract import TOOL_NAMES
from agent_memory.domain.memory.block import DEFAULT_BUDGET_BYTES
from agent_memory.edges.requests.base import Body, Content, JsonObject, OptionalCounter, OptionalUuid, PairRule, coded
from agent_memory.edges.requests.memory import BlockBudget, ConflictResolution
from agent_memory.edges.requests.validation import PlainValidator, WithJsonSchema


def _tools(value: Any) -> list[str] | None:
    """The tools a run is offered: None for all of them; [] for a direct reply, which gets none."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise coded("parameter_invalid", "must be a list of tool names")
    unknown = [t for t in value if t not in TOOL_NAMES]
    if unknown:
        raise coded(
            "parameter_invalid",
            f"execution.tools names unknown tool(s) {', '.join(repr(t[:64]) for t in unknown[:5])}; "
            f"the tools are {', '.join(TOOL_NAMES)}.",
            whole=True,
        )
    if len(set(value)) != len(value):
        raise coded("parameter_invalid", "names a tool twice")
    return [t for t in TOOL_NAMES if t in value]


ToolList = Annotated[
    list[str] | None,
    PlainValidator(_tools),
    WithJsonSchema({"anyOf": [{"type": "array", "items": {"enum": list(TOOL_NAMES)}}, {"type": "null"}]}),
]


ToolArguments = JsonObject


def _capabilities(value: Any) -> list[Any] | None:
    # The mounts' own rules (and their messages naming each mount) are mounts.py's.
    if value is not None and (not isinstance(value, list) or len(value) > 8):
        raise coded("validation_failed", "must be a list of at most 8 capabilities such as {ref, config}")
    return value


Capabilities = Annotated[
    list[Any] | None,
    PlainValidator(_capabilities),
    WithJsonSchema({"anyOf": [{"type": "array", "items": {"type": "object"}, "maxItems": 8}, {"type": "null"}]}),
]


class CreateExecutionFields(Body):
    speaker_public_id: OptionalUuid = None
    parent_execution_public_id: OptionalUuid = None
    delegate_to_agent_public_id: OptionalUuid = None
    # Peer mail: the execution this one is mail from (its bindings are intersected with the sender's).
    mail_from_execution_public_id: OptionalUuid = None
    tools: ToolList = None
    capabilities: Capabilities = None


def _absolute(value: Any) -> str:
    # A session path: absolute inside a mount, or `<root>/<rest>` in the execution's roots (mounts.locate).
    if not isinstance(value, str):
        raise coded(
            "memory_path_invalid", "must be a path such as '/workspace/runbooks/a.md' or 'conversation/notes.md'"
        )
    return value


AbsolutePath = Annotated[str, PlainValidator(_absolute), WithJsonSchema({"type": "string"})]


class SessionFileFields(PairRule):
    path: AbsolutePath
    content: Content | None = None
    old_text: Annotated[str | None, PlainValidator(lambda v: _optional_text(v)), WithJsonSchema({})] = None
    new_text: Annotated[str | None, PlainValidator(lambda v: _optional_text(v)), WithJsonSchema({})] = None
    expected_public_id: OptionalUuid = None
    expected_lock_version: OptionalCounter = None
    conflict_resolution: ConflictResolution = None


def _optional_text(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise coded("parameter_invalid", "must be a string")
    return value


class SessionFile(Body):
    file: SessionFileFields


class SessionFileChangeFields(SessionFileFields):
    """A write, edit or delete: the condition pair must be sent (null and null: "create only if absent"), as
    on every other door; a body without it is parameter_missing, never taken for a create."""

    expected_public_id: OptionalUuid
    expected_lock_version: OptionalCounter


class SessionFileChange(Body):
    file: SessionFileChangeFields


class SessionFileRenameFields(PairRule):
    path: AbsolutePath
    new_path: AbsolutePath
    expected_public_id: OptionalUuid
    expected_lock_version: OptionalCounter


class SessionFileRename(Body):
    file: SessionFileRenameFields


class CreateExecution(Body):
    execution: CreateExecutionFields = CreateExecutionFields()


class ExecutionMemoryBlockFields(Body):
    # The subject and the bindings are the execution's, frozen: only the budget is the caller's to choose.
    budget_bytes: BlockBudget = DEFAULT_BUDGET_BYTES


class ExecutionMemoryBlock(Body):
    memory_block: ExecutionMemoryBlockFields


class CallTool(Body):
    # The tool's own model (edges/requests/tools.py) judges the arguments, once the caller is known.
    input: ToolArguments
    # The call's Idempotency-Key, for a runtime whose tool calls carry no headers (edges/http/glue.py).
    idempotency_key: str | None = None
