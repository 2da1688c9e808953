"""Drop-ins for agent frameworks, each over the standard-library client (`agent_memory_sdk.client`).

- `memory_commands`: the six commands of Claude's memory tool (`memory_20250818`) against an execution's
  file tree, with no dependency of its own (the MCP server's `memory` tool runs it too).
- `anthropic`: `MemoryTool`, the Anthropic SDK's `BetaAbstractMemoryTool` backed by this service
  (from a clone: `pip install -e '.[anthropic]'`).
- `langgraph`: `ServiceStore`, LangGraph's long-term `BaseStore` kept by this service (`.[langgraph]`).
- `strands`: the model's memory tools as Strands Agents tools, and the memory block as the system prompt
  (`.[strands]`).

Nothing here is imported by `agent_memory` itself, so the package never imports an optional extra.
"""
