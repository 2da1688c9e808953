"""Executions, the model's tools over HTTP, and the tools' published schemas."""

from __future__ import annotations

from ... import views
from ...inputs.executions import CallTool, CreateExecution
from .. import services
from ..glue import Reply, Request
from . import parsed


def create_execution(req: Request) -> Reply:
    e = parsed(req, CreateExecution).execution
    p = req.params
    new = services.executions().create(
        req.token,
        p["workspace_public_id"],
        p["conversation_public_id"],
        speaker_id=e.speaker_public_id,
        parent_id=e.parent_execution_public_id,
        delegate_id=e.delegate_to_agent_public_id,
        tools=e.tools,
    )
    return Reply(201, {"execution": views.execution(new.execution), "secret": new.secret})


def call_tool(req: Request) -> Reply:
    body = parsed(req, CallTool)
    p = req.params
    result = services.tools().call(p["execution_public_id"], p["tool_name"], body.input, req.token)
    return Reply(200, views.tool_result(result))


def tool_schemas(req: Request) -> Reply:
    from ...tools import tool_schemas as schemas

    return Reply(200, {"tools": schemas(req.query.get("format") or "anthropic")})
