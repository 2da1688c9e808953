"""The composition root: each domain service built once per container, around one store and one resolver.

Each factory imports its module when first called, so a route's Lambda loads only the services its
handler asks for (a directory route never imports the grep engine or the tool models).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_memory.core.budget import Budgets
    from agent_memory.core.ports import Store
    from agent_memory.core.resolver import Resolver
    from agent_memory.core.settings import Settings
    from agent_memory.domain.directory.entries import StoreEntries
    from agent_memory.domain.directory.executions import ExecutionService
    from agent_memory.domain.directory.merge import MergeService
    from agent_memory.domain.directory.service import Directory
    from agent_memory.domain.memories.service import MemoriesService
    from agent_memory.domain.memory.block import BlockService
    from agent_memory.domain.memory.history import HistoryService
    from agent_memory.domain.memory.service import MemoryService
    from agent_memory.domain.memory.skills import SkillService
    from agent_memory.domain.records.service import RecordsService
    from agent_memory.edges.tools.dispatch import ToolRunner
    from agent_memory.store.sessions import ConsoleSessions


def settings() -> Settings:
    # Read from the environment on the first request, not when the route's module loads.
    from agent_memory.core.settings import settings as read

    return read()


@lru_cache(maxsize=1)
def budgets() -> Budgets:
    from agent_memory.core.budget import Budgets

    s = settings()
    return Budgets(s.writes_per_minute, s.account_writes_per_minute, s.origin_writes_per_minute)


def store() -> Store:
    """The one store of the container; each service below is handed the narrow ports it asks for."""
    from agent_memory.store import get_store

    return get_store()


@lru_cache(maxsize=1)
def resolver() -> Resolver:
    from agent_memory.core.resolver import Resolver

    return Resolver(store())


@lru_cache(maxsize=1)
def directory() -> Directory:
    from agent_memory.domain.directory.service import Directory

    r = resolver()
    return Directory(store(), r, budgets())


@lru_cache(maxsize=1)
def memory() -> MemoryService:
    from agent_memory.domain.memory.service import MemoryService

    return MemoryService(budgets(), settings().versions_kept)


@lru_cache(maxsize=1)
def history() -> HistoryService:
    from agent_memory.domain.memory.history import HistoryService

    return HistoryService(memory())


@lru_cache(maxsize=1)
def skills() -> SkillService:
    from agent_memory.domain.memory.skills import SkillService

    return SkillService()


@lru_cache(maxsize=1)
def block() -> BlockService:
    from agent_memory.domain.memory.block import BlockService

    return BlockService()


@lru_cache(maxsize=1)
def executions() -> ExecutionService:
    from agent_memory.domain.directory.executions import ExecutionService

    r = resolver()
    return ExecutionService(store(), r, budgets(), settings().execution_ttl_seconds, memories())


@lru_cache(maxsize=1)
def tools() -> ToolRunner:
    from agent_memory.edges.tools.dispatch import ToolRunner

    # Records are built by the runner when a records tool is first called (`ToolRunner.records`): a document
    # tool never imports the records engine.
    return ToolRunner(resolver(), memory(), skills(), history())


def reset_services() -> None:
    """Forget every built service (tests and the local gateway switch settings and endpoints)."""
    from agent_memory.edges.http.secrets import operator_key

    for factory in (
        budgets,
        resolver,
        directory,
        memory,
        history,
        skills,
        block,
        executions,
        tools,
        memories,
        records,
        entries,
        merges,
        operator_key,
    ):
        factory.cache_clear()


@lru_cache(maxsize=1)
def memories() -> MemoriesService:
    from agent_memory.domain.memories.service import MemoriesService

    r = resolver()
    return MemoriesService(store(), r, memory(), history(), budgets(), git_file_roots=settings().git_file_roots)


@lru_cache(maxsize=1)
def records() -> RecordsService:
    from agent_memory.domain.records.service import RecordsService

    r = resolver()
    return RecordsService(store(), r, budgets())


@lru_cache(maxsize=1)
def entries() -> StoreEntries:
    from agent_memory.domain.directory.entries import StoreEntries

    return StoreEntries(store(), resolver(), budgets())


@lru_cache(maxsize=1)
def merges() -> MergeService:
    from agent_memory.domain.directory.merge import MergeService

    return MergeService(store(), resolver(), budgets())


def sessions() -> ConsoleSessions:
    """The console's sessions: a part of the one store (edges/http/console.py)."""
    from agent_memory.store import get_store

    return get_store()
