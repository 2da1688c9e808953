"""Agent memory: scoped, conditionally written markdown documents for AI agents."""

__version__ = "0.1.0"
