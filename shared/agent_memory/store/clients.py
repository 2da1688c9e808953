"""The AWS clients and the resources every part of the store talks to."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from agent_memory.core.settings import settings

# The local service's embedded storage answers its requests in-process (agent_memory_sdk.local.moto_backend);
# never set in Lambda. A request to any other endpoint still goes over the network.
LOCAL_SEND: list[Callable[..., Any]] = []

# The only services the store's session makes clients for: its loader is told so, instead of listing
# botocore's four hundred service folders (one listdir and several stats each) on the first client.
STORE_SERVICES = ("dynamodb", "s3")


# The service models cut to the operations the code base names, and endpoints.json cut to the two services
# (written by .ci/aws_models.py): the whole files are 3 MB of JSON, half of what creating the two clients
# costs a cold start. Searched first; botocore's own data serves everything else.
AWS_MODELS = Path(__file__).with_name("aws_models")


@lru_cache(maxsize=1)
def _loader() -> Any:
    """botocore's data loader, which keeps every service model and endpoint file it parsed: a new session on
    the same loader (after a SnapStart restore) makes its clients without parsing them again."""
    from botocore.loaders import Loader

    class StoreLoader(Loader):
        def list_available_services(self, type_name: str) -> list[str]:
            return list(STORE_SERVICES)

    return StoreLoader(extra_search_paths=[str(AWS_MODELS)])


@lru_cache(maxsize=1)
def _session() -> Any:
    """One session for both clients, so the second reuses the first's endpoint data and credentials.

    A botocore session, not boto3's: boto3 adds nothing the store calls (its S3 transfer methods, its
    resources) and importing it costs a cold start ~17 ms more than botocore's session (docs/decisions.md,
    "Issue 27")."""
    from botocore.session import get_session

    session = get_session()
    session.register_component("data_loader", _loader())
    return session


def _config(service: str) -> Any:
    from botocore.config import Config

    cfg = Config(
        region_name=settings().region,
        connect_timeout=2,
        read_timeout=settings().aws_read_timeout_seconds,
        retries={"mode": "standard", "max_attempts": 3},
        max_pool_connections=32,
        tcp_keepalive=True,
        # Every request is built by this package's own codec (store/items.py) and checked by the service
        # itself; botocore's client-side walk of the input shape would check it a second time, at a third
        # or more of what building a request costs (docs/decisions.md).
        parameter_validation=False,
    )
    return cfg.merge(Config(s3={"addressing_style": "path"})) if service == "s3" else cfg


def _client(service: str) -> Any:
    client = _session().create_client(service, config=_config(service))
    if LOCAL_SEND:
        # Last: a test's own hook on this client still sees (and may answer) the request first.
        client.meta.events.register_last("before-send", LOCAL_SEND[0])
    return client


_CLIENTS: dict[str, Any] = {}
# A grep's or a block's parallel reads may reach for the S3 client at once: one of them creates it.
_CREATING = threading.Lock()


def _once(service: str) -> Any:
    client = _CLIENTS.get(service)
    if client is None:
        with _CREATING:
            client = _CLIENTS.get(service)
            if client is None:
                client = _CLIENTS[service] = _client(service)
    return client


def ddb_client() -> Any:
    """The DynamoDB client, created once per container on the first request that reads or writes an item."""
    return _once("dynamodb")


def s3_client() -> Any:
    """The S3 client, created once per container on the first request that needs content: a route answered
    from DynamoDB alone (most reads, with the content cache warm) never builds it (each costs tens of ms)."""
    return _once("s3")


def aws_clients() -> tuple[Any, Any]:
    """Both clients (creating what is not yet made): the tests', the local gateway's and the sweeper's door."""
    return ddb_client(), s3_client()


def reset_clients(keep_models: bool = False) -> None:
    """Forget the clients and their session (credentials, connection pools); the parsed service models too
    unless `keep_models` (a SnapStart restore keeps them: they are the same in every environment)."""
    with _CREATING:
        _CLIENTS.clear()
        _session.cache_clear()
        if not keep_models:
            _loader.cache_clear()


class Backend:
    """One DynamoDB table and one S3 bucket, and the clients that reach them: what every store part shares."""

    def __init__(self, ddb: Any, s3: Any, table: str, bucket: str) -> None:
        # None: the container's client, created on first use (`ddb_client`, `s3_client`).
        self._ddb = ddb
        self._s3 = s3
        self.table = table
        self.bucket = bucket

    # Not kept on the store: after a SnapStart restore (edges/snapstart.py) the container's clients
    # are new ones, and every store part must reach those.
    @property
    def ddb(self) -> Any:
        return ddb_client() if self._ddb is None else self._ddb

    @property
    def s3(self) -> Any:
        return s3_client() if self._s3 is None else self._s3

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
