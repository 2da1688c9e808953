"""Agent memory: scoped, conditionally written markdown documents for AI agents."""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .client import MemoryApiError as MemoryApiError
    from .client import MemoryClient as MemoryClient

# The client is loaded on first use, so importing the package (as every Lambda does) stays cheap.
_LAZY = {"MemoryClient", "MemoryApiError"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module 'agent_memory' has no attribute {name!r}")
