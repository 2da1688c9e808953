"""Storage: the DynamoDB + S3 store behind the domain's `Store` port.

The parts change for different reasons: `keys` (the table layout), `items` (rows <-> items), `errors`
(every botocore error read in one place), `reads`, `directory`, `documents` (with `forklog`), `versions`
and `content`; `DynamoStore` is all of them over one table and one bucket.
"""

from __future__ import annotations

from functools import lru_cache

from ..settings import settings
from .clients import aws_clients
from .content import CACHE, Content
from .directory import DirectoryWrites
from .entries import Entries
from .idempotency import IdempotencyRecords
from .memories import Memories
from .merge import Merges
from .reads import Reads
from .records import Records
from .versions import Versions

__all__ = ["CACHE", "DynamoStore", "aws_clients", "get_store", "reset_store"]


class DynamoStore(Reads, DirectoryWrites, Versions, Memories, Records, Entries, Merges, Content, IdempotencyRecords):
    """The production store: one DynamoDB table and one S3 bucket (implements `ports.Store`)."""


@lru_cache(maxsize=1)
def get_store() -> DynamoStore:
    ddb, s3 = aws_clients()
    s = settings()
    return DynamoStore(ddb, s3, s.table_name, s.bucket_name)


def reset_store() -> None:
    """Forget clients and settings (tests and the local gateway switch endpoints)."""
    get_store.cache_clear()
    aws_clients.cache_clear()
    settings.cache_clear()
    CACHE.clear()
