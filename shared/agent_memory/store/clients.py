"""The AWS clients and the resources every part of the store talks to."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from agent_memory.core.settings import settings


@lru_cache(maxsize=1)
def aws_clients() -> tuple[Any, Any]:
    """boto3 clients, created once per container: each costs tens of milliseconds to build."""
    import boto3
    from botocore.config import Config

    cfg = Config(
        region_name=settings().region,
        connect_timeout=2,
        read_timeout=settings().aws_read_timeout_seconds,
        retries={"mode": "standard", "max_attempts": 3},
        max_pool_connections=32,
        tcp_keepalive=True,
    )
    session = boto3.session.Session()
    s3_cfg = cfg.merge(Config(s3={"addressing_style": "path"}))
    clients = session.client("dynamodb", config=cfg), session.client("s3", config=s3_cfg)
    if LOCAL_SEND:
        for client in clients:
            # Last: a test's own hook on these clients still sees (and may answer) the request first.
            client.meta.events.register_last("before-send", LOCAL_SEND[0])
    return clients


# The local service's embedded storage answers its requests in-process (agent_memory_sdk.local.moto_backend);
# never set in Lambda. A request to any other endpoint still goes over the network.
LOCAL_SEND: list[Callable[..., Any]] = []


class Backend:
    """One DynamoDB table and one S3 bucket, and the clients that reach them: what every store part shares."""

    def __init__(self, ddb: Any, s3: Any, table: str, bucket: str) -> None:
        self.ddb = ddb
        self.s3 = s3
        self.table = table
        self.bucket = bucket

    def _new(self, item: dict[str, Any]) -> dict[str, Any]:
        """A Put of a new item, refused when its key is taken. The old item tells a key truly taken from
        this very create, landed by an earlier send whose answer was lost (store/commit.py answers that
        one as the success it was)."""
        return {
            "Put": {
                "TableName": self.table,
                "Item": item,
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": "pk"},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }
