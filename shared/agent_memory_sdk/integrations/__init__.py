"""Drop-ins for agent frameworks, each over the standard-library client (`agent_memory_sdk.client`).

- `memory_commands`: the six commands of Claude's memory tool (`memory_20250818`) against an execution's
  file tree, with no dependency of its own (the MCP server's `memory` tool runs it too).
- `anthropic`: `MemoryTool`, the Anthropic SDK's `BetaAbstractMemoryTool` backed by this service
  (`pip install 'agent-memory[anthropic]'`).

Nothing here is imported by `agent_memory` itself, so the package never imports an optional extra.
"""
