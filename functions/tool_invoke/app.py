"""Invoked in-account (IAM): {"execution", "tool", "input"} -> the tool result."""

from agent_memory.web.tool_lambda import handler

__all__ = ["handler"]
