"""Agent memory: scoped, conditionally written markdown documents for AI agents."""

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .client import MemoryApiError as MemoryApiError
    from .client import MemoryClient as MemoryClient

# The client is loaded on first use, so importing the package (as every Lambda does) stays cheap.
_LAZY = {"MemoryClient", "MemoryApiError"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        try:
            client = importlib.import_module(f"{__name__}.client")
        except ModuleNotFoundError as exc:
            # The Lambda layer leaves the client out (shared/Makefile): say so instead of a bare module name.
            if exc.name != f"{__name__}.client":
                raise
            raise ImportError(
                f"agent_memory.{name} belongs to the developer's HTTP client, which the Lambda layer does not ship; "
                "install the agent-memory package to use it."
            ) from exc

        return getattr(client, name)
    raise AttributeError(f"module 'agent_memory' has no attribute {name!r}")
