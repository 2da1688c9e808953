"""Executions, the model's tools over HTTP, and the tools' published schemas."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import views
from ...inputs.executions import CallTool, CreateExecution
from .. import services
from ..glue import Reply, Request
from . import answered, parsed

if TYPE_CHECKING:
    from ...executions import NewExecution
    from ...model import ToolResult


def create_execution(req: Request) -> Reply:
    e = parsed(req, CreateExecution).execution
    p = req.params
    return answered(
        _execution,
        lambda: services.executions().create(
            req.token,
            p["workspace_public_id"],
            p["conversation_public_id"],
            speaker_id=e.speaker_public_id,
            parent_id=e.parent_execution_public_id,
            delegate_id=e.delegate_to_agent_public_id,
            tools=e.tools,
        ),
    )


def _execution(new: NewExecution) -> Reply:
    return Reply(201, {"execution": views.execution(new.execution), "secret": new.secret})


def _tool_result(result: ToolResult) -> Reply:
    return Reply(200, views.tool_result(result))


def call_tool(req: Request) -> Reply:
    body = parsed(req, CallTool)
    p = req.params
    return answered(
        _tool_result, lambda: services.tools().call(p["execution_public_id"], p["tool_name"], body.input, req.token)
    )


def tool_schemas(req: Request) -> Reply:
    from ...tools import tool_schemas as schemas

    return Reply(200, {"tools": schemas(req.query.get("format") or "anthropic")})
