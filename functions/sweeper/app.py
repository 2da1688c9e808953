"""Scheduled (EventBridge, hourly): delete content versions that no row references."""

from agent_memory.store.sweeper import handler

__all__ = ["handler"]
