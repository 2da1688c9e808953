"""Storage: the DynamoDB + S3 store behind the domain's `Store` port.

The parts change for different reasons: `kinds` (every stored item kind: its key shape, row type and
codec), `keys` (the key builders derived from it), `items` (the marshalling and the codecs), `commit`
(every botocore error read in one place), `reads`, `directory`, `documents` (with `forklog`), `versions`
and `content`; `DynamoStore` is all of them over one table and one bucket.
"""

from __future__ import annotations

from functools import lru_cache

from agent_memory.core.settings import settings
from agent_memory.store.clients import aws_clients, reset_clients
from agent_memory.store.content import CACHE, Content
from agent_memory.store.directory import DirectoryWrites
from agent_memory.store.entries import Entries
from agent_memory.store.idempotency import IdempotencyRecords
from agent_memory.store.memories import Memories
from agent_memory.store.merge import Merges
from agent_memory.store.reads import Reads
from agent_memory.store.records import Records
from agent_memory.store.sessions import ConsoleSessions
from agent_memory.store.versions import Versions

__all__ = ["CACHE", "DynamoStore", "aws_clients", "get_store", "reset_store"]


class DynamoStore(
    Reads,
    DirectoryWrites,
    Versions,
    Memories,
    Records,
    Entries,
    Merges,
    Content,
    IdempotencyRecords,
    ConsoleSessions,
):
    """The production store: one DynamoDB table and one S3 bucket (implements `ports.Store`)."""


@lru_cache(maxsize=1)
def get_store() -> DynamoStore:
    s = settings()
    return DynamoStore(None, None, s.table_name, s.bucket_name)  # each client made when first used


def reset_store() -> None:
    """Forget clients and settings (tests and the local gateway switch endpoints)."""
    get_store.cache_clear()
    reset_clients()
    settings.cache_clear()
    CACHE.clear()
