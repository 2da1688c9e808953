"""What runs beside the service, never in a Lambda: the HTTP client, the local server and the integrations.

The Lambda layer ships `agent_memory` alone (shared/Makefile); this package depends on it, never the reverse.
"""

from agent_memory_sdk.client import MemoryApiError, MemoryClient

__all__ = ["MemoryApiError", "MemoryClient"]
