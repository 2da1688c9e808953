"""Claude's memory tool, backed by this service: a drop-in for the Anthropic SDK's local-filesystem memory.

    pip install -e '.[anthropic]'     # from a clone of the repository

    from anthropic import Anthropic
    from agent_memory_sdk.integrations.anthropic import MemoryTool

    memory = MemoryTool(url="https://.../", token=agent_token, execution_public_id=execution["public_id"])
    runner = Anthropic().beta.messages.tool_runner(model=..., messages=[...], tools=[memory], ...)

`MemoryTool` is a `BetaAbstractMemoryTool`: the SDK hands it the model's `memory_20250818` commands (view,
create, str_replace, insert, delete, rename) and it runs each against the execution's file tree over HTTP
(`agent_memory_sdk.integrations.memory_commands`, which says how `/memories/...` maps onto roots and mounts and
what each command's conditional write is). A refusal is raised as the SDK's `ToolError` with the text the
SDK's own implementation answers, so the tool runner hands it to the model as an error result. A refusal of
the call itself (a revoked token, an unknown or stopped execution) is raised as the client's exception.

`AsyncMemoryTool` is the same tool for `AsyncAnthropic`'s tool runner (a `BetaAsyncAbstractMemoryTool`):
each command runs the very same code in a worker thread (`anyio.to_thread`, as the SDK's own async
filesystem tool runs its file I/O), so the event loop never waits on the service and commands the model
asks for at once run at once. A command cancelled in flight is not abandoned: it finishes, its await
answers what it did, and the cancellation lands at the caller's next await, so no change goes through
unseen.

    memory = AsyncMemoryTool(url=..., token=agent_token, execution_public_id=execution["public_id"])
    runner = AsyncAnthropic().beta.messages.tool_runner(model=..., messages=[...], tools=[memory], ...)
"""

from __future__ import annotations

import anyio.to_thread
from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818Command,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from agent_memory_sdk.client import MemoryClient
from agent_memory_sdk.integrations.memory_commands import CommandError, MemoryCommands

__all__ = ["AsyncMemoryTool", "MemoryTool"]


class _Backed:
    """What both tools hold: the client, the execution, and its commands. Give `url` and `token` (the
    execution's principal's), or a `client` already built."""

    def __init__(
        self,
        execution_public_id: str,
        url: str | None,
        token: str | None,
        client: MemoryClient | None,
        timeout: float,
    ) -> None:
        if client is None:
            if url is None:
                raise ValueError(f"{type(self).__name__} needs the service's url (and a token), or a MemoryClient")
            client = MemoryClient(url, token, timeout)
        self.client = client
        self.execution_public_id = execution_public_id
        self.commands = MemoryCommands(client.session_files(execution_public_id))

    def _run(self, command: BetaMemoryTool20250818Command) -> str:
        """One command of the SDK's types against the service; a refusal as the SDK's ToolError."""
        c = self.commands
        try:
            if isinstance(command, BetaMemoryTool20250818ViewCommand):
                return c.view(command.path, command.view_range)
            if isinstance(command, BetaMemoryTool20250818CreateCommand):
                return c.create(command.path, command.file_text)
            if isinstance(command, BetaMemoryTool20250818StrReplaceCommand):
                return c.str_replace(command.path, command.old_str, command.new_str)
            if isinstance(command, BetaMemoryTool20250818InsertCommand):
                return c.insert(command.path, command.insert_line, command.insert_text)
            if isinstance(command, BetaMemoryTool20250818DeleteCommand):
                return c.delete(command.path)
            if isinstance(command, BetaMemoryTool20250818RenameCommand):
                return c.rename(command.old_path, command.new_path)
            raise CommandError(f"Unknown command {str(getattr(command, 'command', None))[:40]!r}.")
        except CommandError as err:
            raise ToolError(err.text) from err


class MemoryTool(_Backed, BetaAbstractMemoryTool):
    """The memory tool of one execution, for `Anthropic`'s tool runner."""

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
        BetaAbstractMemoryTool.__init__(self, cache_control=cache_control)
        _Backed.__init__(self, execution_public_id, url, token, client, timeout)

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._run(command)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._run(command)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self._run(command)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self._run(command)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._run(command)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._run(command)


class AsyncMemoryTool(_Backed, BetaAsyncAbstractMemoryTool):
    """The memory tool of one execution, for `AsyncAnthropic`'s tool runner: `MemoryTool`'s commands,
    each in a worker thread."""

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
        BetaAsyncAbstractMemoryTool.__init__(self, cache_control=cache_control)
        _Backed.__init__(self, execution_public_id, url, token, client, timeout)

    async def _in_thread(self, command: BetaMemoryTool20250818Command) -> str:
        return await anyio.to_thread.run_sync(self._run, command)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await self._in_thread(command)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await self._in_thread(command)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await self._in_thread(command)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await self._in_thread(command)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await self._in_thread(command)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await self._in_thread(command)
