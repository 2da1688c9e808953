"""`agent-memory mcp`: a real MCP client session, over stdio, against the local gateway."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import pytest
from agent_memory.edges.tools.dispatch import TOOLS
from agent_memory_sdk.client import NEW, MemoryClient
from agent_memory_sdk.local.mcp_server import IDEMPOTENCY_KEY, MEMORY_TOOL
from agent_memory_sdk.local.runtime import LocalService
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent, TextResourceContents

from ..support import client_room

T = TypeVar("T")


@dataclass
class Setup:
    url: str
    owner: MemoryClient
    agent: MemoryClient
    ws: str
    conv: str


@pytest.fixture
def setup(fresh: LocalService) -> Setup:
    _, owner, ws = client_room(fresh.url, fresh.operator_key)
    program = owner.create_agent("helper")
    owner.add_member(ws, agent_public_id=program["agent"]["public_id"])
    conv = owner.create_conversation(ws, answering_agent_public_id=program["agent"]["public_id"])["public_id"]
    return Setup(fresh.url, owner, owner.with_token(program["token"]), ws, conv)


def _args(s: Setup, *extra: str) -> list[str]:
    assert s.agent.token
    return [
        "-m",
        "agent_memory_sdk.local.cli",
        "mcp",
        "--url",
        s.url,
        "--token",
        s.agent.token,
        "--workspace",
        s.ws,
        "--conversation",
        s.conv,
        *extra,
    ]


def in_session(args: list[str], body: Callable[[ClientSession], Awaitable[T]]) -> T:
    # This environment, so the server runs the code under test (the MCP client otherwise passes only a few variables)
    params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))

    async def main() -> T:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)

    return anyio.run(main)


def _text(result: CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


def test_an_mcp_client_lists_calls_and_reads_the_block(setup: Setup) -> None:
    # Given an MCP client session with `agent-memory mcp` for the agent's conversation
    async def body(session: ClientSession) -> dict[str, Any]:
        # When it lists the tools, writes and reads a document, and reads the memory block
        tools = await session.list_tools()
        wrote = await session.call_tool(
            "memory_write",
            {
                "path": "conversation/plan.md",
                "content": "ship friday",
                "expected_public_id": None,
                "expected_lock_version": None,
            },
        )
        again = await session.call_tool(
            "memory_write",
            {
                "path": "conversation/plan.md",
                "content": "ship monday",
                "expected_public_id": None,
                "expected_lock_version": None,
            },
        )
        read = await session.call_tool("memory_read", {"path": "conversation/plan.md"})
        resources = await session.list_resources()
        block = await session.read_resource("memory://block")
        return {"tools": tools, "wrote": wrote, "again": again, "read": read, "resources": resources, "block": block}

    got = in_session(_args(setup), body)
    # Then the tools are the service's, by the service's names, with the service's schemas (the writing
    # tools' schemas name idempotency_key themselves, since MCP has no headers to carry it)
    schemas = {t["name"]: t for t in setup.agent.tool_schemas()}
    # (and Claude's memory tool last, as one `memory` tool: tests/http/test_anthropic_memory_tool.py)
    assert [t.name for t in got["tools"].tools] == [*TOOLS, MEMORY_TOOL]
    for tool in got["tools"].tools:
        if tool.name != MEMORY_TOOL:
            assert tool.input_schema == schemas[tool.name]["input_schema"]
    assert "description" in schemas["memory_append"]["input_schema"]["properties"][IDEMPOTENCY_KEY]
    # And the write landed, a second create is refused as the model reads it, and the read shows the text
    assert not got["wrote"].is_error and "Created conversation/plan.md" in _text(got["wrote"])
    assert got["again"].is_error and _text(got["again"]).startswith("stale_object")
    assert not got["read"].is_error and "ship friday" in _text(got["read"])
    assert got["read"].structured_content["content"] == "ship friday"
    # And the memory block resource is the block the service assembles
    assert [str(r.uri) for r in got["resources"].resources] == ["memory://block"]
    contents = got["block"].contents[0]
    assert isinstance(contents, TextResourceContents) and "ship friday" in contents.text
    assert contents.text == setup.owner.memory_block(setup.ws, setup.conv)["text"]
    # And the write went through the service: the conversation moved one revision
    assert setup.owner.show_conversation(setup.ws, setup.conv)["context_revision"] == 1


def test_an_existing_execution_can_be_named(setup: Setup) -> None:
    # Given an execution the runtime created itself, offered only the reading tools
    execution = setup.agent.create_execution(setup.ws, setup.conv, tools=["memory_ls", "memory_read"])["execution"]
    setup.owner.conversation_memory(setup.ws, setup.conv).write("conversation/a.md", "alpha", NEW)

    async def body(session: ClientSession) -> tuple[CallToolResult, CallToolResult]:
        ls = await session.call_tool("memory_ls", {})
        write = await session.call_tool(
            "memory_write",
            {"path": "conversation/b.md", "content": "x", "expected_public_id": None, "expected_lock_version": None},
        )
        return ls, write

    # When the MCP server runs its calls in that execution
    ls, write = in_session(_args(setup, "--execution", execution["public_id"]), body)
    # Then reads work, and a tool the execution was started without is refused as a result
    assert "conversation/a.md" in _text(ls)
    assert write.is_error and "not_authorized" in _text(write)
    assert setup.owner.conversation_memory(setup.ws, setup.conv).ls()[0]["path"] == "conversation/a.md"


def test_a_bad_token_stops_the_server_at_start_with_a_reason(setup: Setup) -> None:
    # When the server is started with a token the service does not know
    args = _args(setup)
    args[args.index("--token") + 1] = "am_a_nobody_nothing"
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    # Then it exits at once, saying why on stderr and nothing on stdout (the protocol channel)
    assert done.returncode == 2
    assert "not_authenticated" in done.stderr
    assert done.stdout == ""


def test_every_tool_refuses_a_stray_field_by_name(setup: Setup) -> None:
    # Given an MCP client session
    async def body(session: ClientSession) -> dict[str, Any]:
        # When it calls a service tool and Claude's memory tool, each with a misspelled field
        tools = await session.list_tools()
        service = await session.call_tool("memory_read", {"pth": "conversation/plan.md"})
        memory = await session.call_tool("memory", {"command": "view", "path": "/memories", "view_rnge": [1, 2]})
        return {"tools": tools, "service": service, "memory": memory}

    got = in_session(_args(setup), body)
    # Then every tool's schema is closed to other fields
    open_ = [t.name for t in got["tools"].tools if t.input_schema.get("additionalProperties") is not False]
    assert not open_, open_
    # And each call is refused to the model, naming the field and the one it meant
    assert got["service"].is_error, _text(got["service"])
    assert "`input.pth`: did you mean `path`?" in _text(got["service"]), _text(got["service"])
    assert got["memory"].is_error and "`view_rnge`: did you mean `view_range`?" in _text(got["memory"])
