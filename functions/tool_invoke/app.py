"""Invoked in-account: {"execution", "tool", "input", "secret" | "token"} -> the tool result."""

from agent_memory.edges.tools.lambda_entry import handler

__all__ = ["handler"]
