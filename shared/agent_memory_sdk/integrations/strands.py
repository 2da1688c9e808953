"""The service's memory tools for Strands Agents, and its memory block in the agent's system prompt.

    pip install -e '.[strands]'

    from strands import Agent
    from agent_memory_sdk import MemoryClient
    from agent_memory_sdk.integrations.strands import MemoryBlockHook, memory_tools

    client = MemoryClient(url, agent_token)
    execution = client.create_execution(ws, conv)["execution"]
    agent = Agent(
        model=...,
        tools=memory_tools(client, execution["public_id"], tools=execution["tools"]),
        hooks=[MemoryBlockHook(client, execution["public_id"], instructions="You are ...")],
    )

`memory_tools` gives one Strands tool per model tool the execution was started with (`memory_read`,
`memory_write`, ...): the names, descriptions and input schemas are the service's own (`GET /tools/schemas`,
read once), and each call goes to the execution's tools route, so every rule (bindings, conditional
writes, read-only mounts, quarantine) is the service's. The model's tool_use id is the call's
Idempotency-Key, so a call Strands sends again answers its first answer. A refusal the model can act on
(stale_object, a path not found...) is an error result with the service's sentence; a refusal of the call
itself (a revoked token, a stopped execution, the service unreachable) is an error result saying so.

`MemoryBlockHook` sets the agent's system prompt, before each invocation, to the given instructions and
the execution's memory block (`POST /executions/{e}/memory_block`), so the model starts every turn from
what is remembered now, the writes of its earlier turns included. `memory_system_prompt` is the same text
once, for an agent built by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from strands.hooks import BeforeInvocationEvent, HookProvider, HookRegistry
from strands.tools.tools import PythonAgentTool
from strands.types.tools import AgentTool, ToolResult, ToolSpec, ToolUse

from agent_memory_sdk.client import READ_ONLY_TOOLS, MemoryClient, MemoryClientError

__all__ = ["MemoryBlockHook", "memory_system_prompt", "memory_tools"]


def memory_tools(
    client: MemoryClient,
    execution_public_id: str,
    *,
    tools: Iterable[str] | None = None,
    schemas: list[Mapping[str, Any]] | None = None,
) -> list[Any]:  # each an AgentTool; typed as Agent(tools=...) takes them
    """The model's memory tools as Strands tools, for one execution. `tools` picks some by name (pass the
    execution's own `execution["tools"]`; default: every tool, the service refusing one the execution was
    not given); `schemas` are the service's, fetched when not given."""
    specs = schemas if schemas is not None else client.tool_schemas("anthropic")
    wanted = None if tools is None else set(tools)
    out: list[AgentTool] = []
    for s in specs:
        name = str(s["name"])
        if wanted is not None and name not in wanted:
            continue
        spec: ToolSpec = {
            "name": name,
            "description": str(s["description"]),
            "inputSchema": {"json": dict(s["input_schema"])},
        }
        out.append(PythonAgentTool(name, spec, _caller(client, execution_public_id, name)))
    return out


def _caller(client: MemoryClient, execution_public_id: str, name: str) -> Any:
    def call(tool_use: ToolUse, **_: Any) -> ToolResult:
        tool_use_id = str(tool_use.get("toolUseId", ""))
        arguments = tool_use.get("input") or {}
        if not isinstance(arguments, Mapping):
            return _result(tool_use_id, "error", "The tool's input must be a JSON object.")
        # The model's tool_use id names this call: a resend of it answers the first answer. A read-only
        # tool is safe to send again as it is, so it carries no key (its answer is not worth recording).
        key = None if name in READ_ONLY_TOOLS or not tool_use_id else tool_use_id
        try:
            answer = client.call_tool(execution_public_id, name, arguments, idempotency_key=key)
        except MemoryClientError as err:
            return _result(tool_use_id, "error", f"The memory service refused the call itself: {err}")
        status = "error" if answer.get("is_error") else "success"
        return _result(tool_use_id, status, str(answer.get("content", "")), answer.get("data"))

    return call


def _result(tool_use_id: str, status: str, text: str, data: Any = None) -> ToolResult:
    content: list[Any] = [{"text": text}]
    if isinstance(data, dict) and status == "success":
        content.append({"json": data})
    return {"toolUseId": tool_use_id, "status": "error" if status == "error" else "success", "content": content}


def memory_system_prompt(
    client: MemoryClient, execution_public_id: str, *, instructions: str = "", budget_bytes: int | None = None
) -> str:
    """The instructions, then the execution's memory block (what is remembered, newest first)."""
    block = client.execution_memory_block(execution_public_id, budget_bytes=budget_bytes)
    text = str(block.get("text", ""))
    return "\n\n".join(part for part in (instructions.strip(), text.strip()) if part)


class MemoryBlockHook(HookProvider):
    """Before each invocation, the agent's system prompt becomes the instructions and the fresh block."""

    def __init__(
        self,
        client: MemoryClient,
        execution_public_id: str,
        *,
        instructions: str = "",
        budget_bytes: int | None = None,
    ) -> None:
        self.client, self.execution_public_id = client, execution_public_id
        self.instructions, self.budget_bytes = instructions, budget_bytes

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeInvocationEvent, self.refresh)

    def refresh(self, event: BeforeInvocationEvent) -> None:
        event.agent.system_prompt = memory_system_prompt(
            self.client, self.execution_public_id, instructions=self.instructions, budget_bytes=self.budget_bytes
        )
