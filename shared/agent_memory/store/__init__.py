"""Storage: the DynamoDB + S3 store behind the domain's `Store` port."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..settings import settings
from .dynamo import CACHE, DynamoStore

__all__ = ["CACHE", "DynamoStore", "aws_clients", "get_store", "reset_store"]


@lru_cache(maxsize=1)
def aws_clients() -> tuple[Any, Any]:
    """boto3 clients, created once per container: each costs tens of milliseconds to build."""
    import boto3
    from botocore.config import Config

    cfg = Config(
        region_name=settings().region,
        connect_timeout=2,
        read_timeout=10,
        retries={"mode": "standard", "max_attempts": 3},
        max_pool_connections=32,
        tcp_keepalive=True,
    )
    session = boto3.session.Session()
    s3_cfg = cfg.merge(Config(s3={"addressing_style": "path"}))
    return session.client("dynamodb", config=cfg), session.client("s3", config=s3_cfg)


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
