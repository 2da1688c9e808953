"""Claude's memory tool, backed by this service: a drop-in for the Anthropic SDK's local-filesystem memory.

    pip install 'agent-memory[anthropic]'

    from anthropic import Anthropic
    from agent_memory.integrations.anthropic import MemoryTool

    memory = MemoryTool(url="https://.../", token=agent_token, execution_public_id=execution["public_id"])
    runner = Anthropic().beta.messages.tool_runner(model=..., messages=[...], tools=[memory], ...)

`MemoryTool` is a `BetaAbstractMemoryTool`: the SDK hands it the model's `memory_20250818` commands (view,
create, str_replace, insert, delete, rename) and it runs each against the execution's file tree over HTTP
(`agent_memory.integrations.memory_commands`, which says how `/memories/...` maps onto roots and mounts and
what each command's conditional write is). A refusal is raised as the SDK's `ToolError` with the text the
SDK's own implementation answers, so the tool runner hands it to the model as an error result. A refusal of
the call itself (a revoked token, an unknown or stopped execution) is raised as the client's exception.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from ..client import MemoryClient
from .memory_commands import CommandError, MemoryCommands

__all__ = ["MemoryTool"]


class MemoryTool(BetaAbstractMemoryTool):
    """The memory tool of one execution. Give `url` and `token` (the execution's principal's), or a
    `client` already built."""

    def __init__(
        self,
        *,
        execution_public_id: str,
        url: str | None = None,
        token: str | None = None,
        client: MemoryClient | None = None,
        timeout: float = 10.0,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        if client is None:
            if url is None:
                raise ValueError("MemoryTool needs the service's url (and a token), or a MemoryClient")
            client = MemoryClient(url, token, timeout)
        self.client = client
        self.execution_public_id = execution_public_id
        self.commands = MemoryCommands(client.session_files(execution_public_id))

    @staticmethod
    def _run(fn: Callable[..., str], *args: Any) -> str:
        try:
            return fn(*args)
        except CommandError as err:
            raise ToolError(err.text) from err

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._run(self.commands.view, command.path, command.view_range)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._run(self.commands.create, command.path, command.file_text)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self._run(self.commands.str_replace, command.path, command.old_str, command.new_str)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self._run(self.commands.insert, command.path, command.insert_line, command.insert_text)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._run(self.commands.delete, command.path)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._run(self.commands.rename, command.old_path, command.new_path)
