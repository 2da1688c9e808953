"""Executions: one accepted model run with its memory configuration frozen at the moment it began.

The resolver decides what the run may reach; this module stores that decision as a row so that every
later tool call (over HTTP or through the in-account Lambda) works from the same bindings, whatever
happens to the conversation's configuration afterwards.
"""

from __future__ import annotations

from typing import Any

from .errors import ApiError
from .ids import PresentedToken, now_iso, uuid7
from .model import Execution
from .ports import Store
from .resolver import Resolver
from .tools import TOOL_NAMES


def execution_json(ex: Execution) -> dict[str, Any]:
    return {
        "public_id": ex.public_id,
        "workspace_public_id": ex.workspace_id,
        "conversation_public_id": ex.conversation_id,
        "agent_public_id": ex.agent_id,
        "principal": {"kind": ex.principal_kind, "public_id": ex.principal_id},
        "subject": {"speaker_public_id": ex.speaker_id} if ex.speaker_id else None,
        "bindings": ex.bindings,
        "tools": ex.tools,
        "created_at": ex.created_at,
    }


def check_tools(value: object) -> list[str] | None:
    """The tools a run is offered: None for all of them; [] for a direct reply, which gets none."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise ApiError("parameter_invalid", "execution.tools must be a list of tool names.")
    unknown = [t for t in value if t not in TOOL_NAMES]
    if unknown:
        raise ApiError(
            "parameter_invalid",
            f"execution.tools names unknown tool(s) {', '.join(repr(t[:64]) for t in unknown[:5])}; "
            f"the tools are {', '.join(TOOL_NAMES)}.",
        )
    if len(set(value)) != len(value):
        raise ApiError("parameter_invalid", "execution.tools names a tool twice.")
    return [t for t in TOOL_NAMES if t in value]


class ExecutionService:
    def __init__(self, store: Store, resolver: Resolver) -> None:
        self.store = store
        self.resolver = resolver

    def create(
        self,
        presented: PresentedToken | None,
        workspace_id: str,
        conversation_id: str,
        *,
        speaker_id: str | None = None,
        parent_id: str | None = None,
        delegate_id: str | None = None,
        tools: list[str] | None = None,
    ) -> dict[str, Any]:
        start = self.resolver.new_execution(
            presented,
            workspace_id,
            conversation_id,
            speaker_id=speaker_id,
            parent_id=parent_id,
            delegate_id=delegate_id,
        )
        ctx = start.context
        assert ctx.workspace is not None and ctx.conversation is not None
        ex = Execution(
            public_id=uuid7(),
            workspace_id=ctx.workspace.public_id,
            conversation_id=ctx.conversation.public_id,
            account_id=ctx.principal.account_id,
            agent_id=start.agent.public_id if start.agent else None,
            principal_kind=ctx.principal.kind,
            principal_id=ctx.principal.public_id,
            speaker_id=start.subject.public_id if start.subject else None,
            # Only what resolved is frozen: a root unavailable now stays out for the whole run.
            bindings=[s.effective_json() for s in ctx.readable()],
            tools=list(TOOL_NAMES) if tools is None else tools,
            created_at=now_iso(),
            parent_id=start.parent.public_id if start.parent else None,
        )
        self.store.create_execution(ex)
        return {"execution": execution_json(ex)}
