"""Agent memory: scoped, conditionally written markdown documents for AI agents.

This package is the server, the Lambda layer every function shares. The HTTP client, the local server and
the integrations are the `agent_memory_sdk` package beside it (`from agent_memory_sdk import MemoryClient`).
"""

__version__ = "0.1.0"
