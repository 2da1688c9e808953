"""The usual world for the issue-2 HTTP tests (an owner, a workspace, a conversation) and ways to look at it.

The storage helpers read the embedded moto directly: they prove what a user cannot see over HTTP (only
hashes are stored, content versions are immutable objects) without going through the code under test.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import requests
from agent_memory.edges import services
from agent_memory.store import DynamoStore
from boto3.dynamodb.types import TypeDeserializer

from ..support import Api, Who, conv_base, ws_base

DOC_KEYS = {
    "path",
    "public_id",
    "lock_version",
    "bytesize",
    "description",
    "written_at",
    "written_by",
    "content_sha256",
    "pii",
    "quarantine",
}
SHOW_KEYS = DOC_KEYS | {"content"}


@dataclass
class OwnedRoom:
    """What every world of these tests starts from: a workspace and its main conversation, both owned by
    Ada (the Human `api.account()` creates), who acts unless a call names someone else."""

    api: Api
    ada: Who
    ws: str
    conv: str

    @property
    def base(self) -> str:
        return conv_base(self.ws, self.conv)

    @property
    def ws_base(self) -> str:
        return ws_base(self.ws)

    def revision(self, conv: str | None = None) -> int:
        value: int = self.api.show_conversation(self.ada, self.ws, conv or self.conv)["context_revision"]
        return value

    def configure(self, memory_context: Any, who: Who | None = None, conv: str | None = None) -> requests.Response:
        """Replace a conversation's memory_context (by default the main one's, as Ada)."""
        return self.api.post(
            f"/workspaces/{self.ws}/conversations/{conv or self.conv}/memory_context",
            who or self.ada,
            {"memory_context": memory_context},
        )

    def listing(self, who: Who | None = None, base: str | None = None) -> list[dict[str, Any]]:
        r = self.api.ls(who or self.ada, base or self.base)
        assert r.status_code == 200, r.text
        rows: list[dict[str, Any]] = r.json()["memory"]
        return rows


class World(OwnedRoom):
    @property
    def owner(self) -> Who:
        return self.ada

    def shown(self, path: str) -> dict[str, Any] | None:
        r = self.api.show(self.owner, self.base, path)
        if r.status_code == 404:
            return None
        assert r.status_code == 200, r.text
        doc: dict[str, Any] = r.json()["memory"]
        return doc

    def state(self) -> tuple[int, list[dict[str, Any]]]:
        """The revision and the listing: any accepted change moves one of them (version, id, size, age)."""
        return self.revision(), self.listing()

    def snapshot(self) -> tuple[int, list[dict[str, Any]], dict[str, str]]:
        """What a refusal must leave alone: the revision, the listing and every document's content."""
        rows = self.listing()
        contents = {}
        for row in rows:
            doc = self.shown(row["path"])
            assert doc is not None
            contents[row["path"]] = doc["content"]
        return self.revision(), rows, contents


def make_world(api: Api) -> World:
    return World(api, *api.room())


# ---- the storage behind the gateway ------------------------------------------------------------------


def _dynamodb() -> Any:
    return boto3.client("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")


def _s3() -> Any:
    return boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")


def scan_table() -> list[dict[str, Any]]:
    ddb = _dynamodb()
    deser = TypeDeserializer()
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": os.environ["TABLE_NAME"]}
    while True:
        page = ddb.scan(**kwargs)
        items += [{k: deser.deserialize(v) for k, v in raw.items()} for raw in page["Items"]]
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def bucket_objects(prefix: str = "") -> dict[str, str]:
    """Every object in the content bucket under `prefix`, key -> text."""
    s3 = _s3()
    bucket = os.environ["BUCKET_NAME"]
    out: dict[str, str] = {}
    kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
    while True:
        page = s3.list_objects_v2(**kwargs)
        for obj in page.get("Contents", []):
            body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
            out[obj["Key"]] = body.decode("utf-8")
        if not page.get("IsTruncated"):
            return out
        kwargs["ContinuationToken"] = page["NextContinuationToken"]


def document_item(scope: str, owner_id: str, rest: str) -> dict[str, Any] | None:
    """The pointer row of one document, found by scanning (the test does not reuse the store's key code)."""
    for item in scan_table():
        if item.get("sk") == f"DOC#{rest}" and str(item.get("pk", "")).endswith(f"{scope}#{owner_id}"):
            return item
    return None


@contextmanager
def s3_calls(operation: str) -> Iterator[Counter[str]]:
    """Count the service's S3 `operation` requests meanwhile (the gateway runs the handlers in this process)."""
    seen: Counter[str] = Counter()

    def count(**_: Any) -> None:
        seen[operation] += 1

    # The service's own client: a test that resets the store leaves the built services on theirs.
    store = services.resolver().store
    assert isinstance(store, DynamoStore)
    event = f"before-call.s3.{operation}"
    store.s3.meta.events.register(event, count, unique_id="test-world-s3-calls")
    try:
        yield seen
    finally:
        store.s3.meta.events.unregister(event, unique_id="test-world-s3-calls")


@contextmanager
def aws_calls() -> Iterator[Counter[str]]:
    """Count every DynamoDB and S3 operation the service makes while the block runs."""
    seen: Counter[str] = Counter()

    def count(event_name: str, **_: Any) -> None:
        _hook, service, operation = event_name.split(".", 2)
        seen[f"{service}:{operation}"] += 1

    from agent_memory.store import aws_clients

    clients = aws_clients()
    for c in clients:
        c.meta.events.register("before-call", count, unique_id="test-world-aws-calls")
    try:
        yield seen
    finally:
        for c in clients:
            c.meta.events.unregister("before-call", unique_id="test-world-aws-calls")
