"""Invoked in-account: {"execution", "tool", "input", "secret" | "token"} -> the tool result."""

from agent_memory.web.tool_lambda import handler

__all__ = ["handler"]
