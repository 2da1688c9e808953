"""Request bodies of executions and tool calls."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import PlainValidator, WithJsonSchema

from ..contract import TOOL_NAMES
from .base import Body, JsonObject, OptionalUuid, coded


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


class CreateExecutionFields(Body):
    speaker_public_id: OptionalUuid = None
    parent_execution_public_id: OptionalUuid = None
    delegate_to_agent_public_id: OptionalUuid = None
    tools: ToolList = None


class CreateExecution(Body):
    execution: CreateExecutionFields = CreateExecutionFields()


class CallTool(Body):
    # The tool's own model (inputs/tools.py) judges the arguments, once the caller is known.
    input: ToolArguments
