"""`agent-memory mcp`: one conversation's memory as an MCP server over stdio.

An MCP client (a desktop assistant, an agent framework) gets the model's memory tools and the memory block
as a resource, and uses this service's memory as is. The server is a thin relay over `MemoryClient`: the
tool list and schemas are the service's own (`GET /tools/schemas`), every call goes to the tools route of
one execution, and the block is fetched fresh on each read. Nothing is decided here that the service does
not decide, so the rules (bindings, conditional writes, skills/ reserved to people) hold for MCP too.

The low-level `Server` is used rather than the decorator API because the tools' input schemas come from
the service at start, not from Python signatures written here: a second copy of them could drift.

Every tool keeps the name and schema the service gives it (`memory_append`, `memory_search`, ...: the
names of `GET /tools/schemas`, the Python client, the README and the guide alike), so one tool has one name
wherever a model or a person meets it. `memory_append` always writes the Workspace layer (the model tool
has no layer), in the workspace of the conversation the server was started for.

`memory` is Claude's memory tool (`memory_20250818`) as one MCP tool: the six commands (view, create,
str_replace, insert, delete, rename) under `/memories`, input shaped as that tool's commands, run by
`agent_memory_sdk.integrations.memory_commands` against the execution's session files, so an MCP client gets
the same texts and conditional writes the Anthropic SDK's `MemoryTool` gives (no SDK needed here).

`idempotency_key`, beside any tool's arguments, is sent as the tools route's Idempotency-Key: the same key
with the same arguments answers the first answer again (nothing is applied twice), and the same key with
other arguments is refused as idempotency_conflict. A key names one execution's calls, so a server
restarted for a new execution should be given `--execution` to keep honouring its earlier keys.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from agent_memory_sdk.client import MemoryApiError, MemoryClient, MemoryClientError
from agent_memory_sdk.integrations.memory_commands import CommandError, MemoryCommands

BLOCK_URI = "memory://block"
T = TypeVar("T")

IDEMPOTENCY_KEY = "idempotency_key"


MEMORY_TOOL = "memory"
MEMORY_SCHEMA: dict[str, Any] = {
    "name": MEMORY_TOOL,
    "description": "Your memory directory, /memories: view a folder (two levels deep) or a file (with line "
    "numbers, optionally a view_range [first, last], last -1 for the end), create a file that does not exist yet "
    "(an existing one is refused), str_replace one exact passage that occurs once, insert text after line "
    "insert_line (0: at the top), delete a file or folder, rename a file. /memories lists the folders you "
    "have; some are read-only.",
    "input_schema": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "delete", "rename"]},
            "path": {
                "type": "string",
                "description": "A path under /memories, such as /memories/conversation/notes.md",
            },
            "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
            "file_text": {"type": "string"},
            "old_str": {"type": "string"},
            "new_str": {"type": "string"},
            "insert_line": {"type": "integer", "minimum": 0},
            "insert_text": {"type": "string"},
            "old_path": {"type": "string"},
            "new_path": {"type": "string"},
        },
        "required": ["command"],
        "additionalProperties": False,
    },
}


class MemoryRelay:
    """What the MCP handlers need: the execution the calls run in, and the service's tool schemas."""

    def __init__(
        self,
        client: MemoryClient,
        workspace: str,
        conversation: str,
        execution: dict[str, Any],
        schemas: list[dict[str, Any]],
        *,
        block_budget: int | None = None,
        session_block: bool = False,
    ) -> None:
        self.client = client
        self.workspace = workspace
        self.conversation = conversation
        self.execution = execution
        self.block_budget = block_budget
        # A named execution's block is its own (its frozen roots, then its mounted Memories).
        self.session_block = session_block
        offered = execution.get("tools")
        # A known execution's frozen tool list decides what is offered; a direct reply's is empty.
        kept = [s for s in schemas if offered is None or s["name"] in offered]
        self.schemas = kept
        # Claude's memory tool runs on the session files, which every execution with tools has.
        if offered is None or offered:
            self.schemas.append(MEMORY_SCHEMA)
        self._commands: MemoryCommands | None = None

    @property
    def speaker(self) -> str | None:
        subject = self.execution.get("subject") or {}
        value = subject.get("speaker_public_id")
        return str(value) if value else None

    def tools(self) -> list[types.Tool]:
        return [
            types.Tool(name=s["name"], description=s["description"], input_schema=s["input_schema"])
            for s in self.schemas
        ]

    def memory(self, arguments: dict[str, Any]) -> types.CallToolResult:
        """One command of Claude's memory tool; its refusals are results for the model, as the SDK's are."""
        taken = list(MEMORY_SCHEMA["input_schema"]["properties"])
        stray = next((k for k in arguments if k not in taken), None)
        if stray is not None:
            # The service's tools refuse a stray field by name; this one is run here, so it is refused here.
            near = difflib.get_close_matches(stray, taken, n=1, cutoff=0.6)
            fix = f"did you mean `{near[0]}`?" if near else f"remove it; the fields are: {', '.join(taken)}."
            return _refused(f"parameter_invalid: There is no field `{stray[:64]}`: {fix}")
        if self._commands is None:
            self._commands = MemoryCommands(self.client.session_files(self.execution["public_id"]))
        try:
            text = self._commands.run(arguments)
        except CommandError as err:
            return _refused(err.text)
        except MemoryClientError as err:
            return _refused(str(err))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=False)

    def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        if name == MEMORY_TOOL and any(s is MEMORY_SCHEMA for s in self.schemas):
            return self.memory(arguments)
        # An MCP client may name its call's idempotency key beside the tool's own arguments.
        key = arguments.get(IDEMPOTENCY_KEY)
        if key is not None and not isinstance(key, str):
            return _refused(f"parameter_invalid: {IDEMPOTENCY_KEY} must be a string of 1 to 128 characters.")
        arguments = {k: v for k, v in arguments.items() if k != IDEMPOTENCY_KEY}
        try:
            result = self.client.call_tool(self.execution["public_id"], name, arguments, idempotency_key=key)
        except MemoryClientError as err:
            # The call itself was refused (unknown execution, revoked token, service down, a key reused for
            # other arguments): the model cannot fix that by retrying the same call, and should say so.
            return _refused(str(err))
        data = result.get("data")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=str(result.get("content", "")))],
            structured_content=data if isinstance(data, dict) else None,
            is_error=bool(result.get("is_error")),
        )

    def block(self) -> str:
        if self.session_block:
            block = self.client.execution_memory_block(self.execution["public_id"], budget_bytes=self.block_budget)
        else:
            block = self.client.memory_block(
                self.workspace, self.conversation, budget_bytes=self.block_budget, speaker_public_id=self.speaker
            )
        return str(block.get("text", ""))


def _refused(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def _blocking(fn: Callable[[], T]) -> T:
    # urllib blocks; a worker thread keeps the stdio loop answering pings meanwhile.
    return await anyio.to_thread.run_sync(fn)


def build_server(relay: MemoryRelay) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=relay.tools())

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        return await _blocking(functools.partial(relay.call, params.name, dict(params.arguments or {})))

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        block = types.Resource(
            uri=BLOCK_URI,
            name="memory_block",
            mime_type="text/markdown",
            description="The memory block this conversation's next reply starts from: newest documents first "
            "(then, for a named execution, the files of the Memories it reads first, and the other Memories it "
            "mounts), and the names of those that did not fit.",
        )
        return types.ListResourcesResult(resources=[block])

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) != BLOCK_URI:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown resource {str(params.uri)[:200]!r}")
        try:
            text = await _blocking(relay.block)
        except MemoryApiError as err:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(err)) from err
        contents = [types.TextResourceContents(uri=BLOCK_URI, text=text, mime_type="text/markdown")]
        return types.ReadResourceResult(contents=contents)

    return Server(
        "agent-memory",
        instructions=(
            "Durable memory for this conversation. Read the memory://block resource for what is remembered; "
            "use memory_ls and memory_read to look further, and memory_write, memory_edit and memory_delete "
            "with the version pair from your latest read. After a stale_object refusal, read again and redo "
            "your change on the current text. Keep small facts (decisions, corrections, preferences) with "
            "memory_append, one piece of information each, and find them with memory_search."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def start(args: argparse.Namespace) -> MemoryRelay:
    token = args.token or os.environ.get("AGENT_MEMORY_TOKEN")
    if not token:
        raise SystemExit("agent-memory mcp: pass --token or set AGENT_MEMORY_TOKEN")
    client = MemoryClient(args.url, token, timeout=args.timeout)
    if args.execution:
        # An execution created elsewhere: its tool list is not readable here, so every tool is offered and
        # the service refuses, as a tool result, any the execution was started without.
        execution: dict[str, Any] = {
            "public_id": args.execution,
            "tools": None,
            "subject": {"speaker_public_id": args.speaker} if args.speaker else None,
        }
    else:
        execution = client.create_execution(args.workspace, args.conversation, speaker_public_id=args.speaker)[
            "execution"
        ]
    return MemoryRelay(
        client,
        args.workspace,
        args.conversation,
        execution,
        client.tool_schemas("anthropic"),
        block_budget=args.block_budget,
        session_block=bool(args.execution),
    )


def run(args: argparse.Namespace) -> int:
    try:
        relay = start(args)
    except MemoryClientError as err:
        # stdout is the protocol channel: diagnostics go to stderr only.
        print(f"agent-memory mcp: {err}", file=sys.stderr)
        return 2
    server = build_server(relay)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)
    return 0
