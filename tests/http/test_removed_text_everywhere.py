"""Redaction and deletion reach every copy (issue 26, item 1).

Each test writes a text no other test uses under an Idempotency-Key, removes it the way its kind is
removed (a document's or a Memory file's version redacted, a record or a store entry deleted), then reads
every item of the deployment's table (every Scan page) and every object of its bucket, as raw bytes and
attribute values, and finds the text nowhere: not in the key record either, which keeps the answer without
its text. A replay of the original keyed write still answers as a replay, without the removed text, and
names what it could not read again in `text_withheld`.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import boto3
import pytest
import requests

from ..support import Api, code, conv_base, created, pair

pytestmark = pytest.mark.http

REPLAYED = "idempotency-replayed"


def unique_secret() -> str:
    return f"secret-{uuid.uuid4().hex}"


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def table_items() -> list[dict[str, Any]]:
    """Every item of the table, raw (attribute-typed), walking every Scan page."""
    ddb = boto3.client("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": os.environ["TABLE_NAME"]}
    while True:
        page = ddb.scan(**kwargs)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def bucket_bytes() -> dict[str, bytes]:
    """Every object of the bucket, key -> bytes, walking every listing page."""
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    bucket = os.environ["BUCKET_NAME"]
    out: dict[str, bytes] = {}
    kwargs: dict[str, Any] = {"Bucket": bucket}
    while True:
        page = s3.list_objects_v2(**kwargs)
        for obj in page.get("Contents", []):
            out[obj["Key"]] = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
        if not page.get("IsTruncated"):
            return out
        kwargs["ContinuationToken"] = page["NextContinuationToken"]


def where(text: str) -> list[str]:
    """Every place in storage that holds `text`: an item (its keys) or an object (its key)."""
    found = []
    for item in table_items():
        if text in json.dumps(item, default=str, ensure_ascii=False):
            found.append(f"item {item.get('pk')} {item.get('sk')}")
    needle = text.encode("utf-8")
    found += [f"object {k}" for k, body in bucket_bytes().items() if needle in body]
    return found


def replay(r: requests.Response) -> dict[str, Any]:
    assert r.headers.get(REPLAYED) == "true", (r.status_code, r.text)
    out: dict[str, Any] = r.json()
    return out


# ---- documents: a version redacted -------------------------------------------------------------------------


def test_a_redacted_document_version_is_nowhere_and_its_keyed_write_replays_without_it(api: Api) -> None:
    ada, ws, conv = api.room()
    base = conv_base(ws, conv)
    secret, key = unique_secret(), uuid.uuid4().hex
    body = {"memory": {"path": "conversation/plan.md", "content": secret, **NEW}}
    first = api.post(base, ada, body, headers=keyed(key))
    assert first.status_code == 201, first.text
    assert first.json()["memory"]["content"] == secret
    # A replay before anything is removed answers the first answer whole, read again
    assert replay(api.post(base, ada, body, headers=keyed(key))) == first.json()
    # Then the text is replaced, and its version redacted
    v1 = created(api.write(ada, base, "conversation/plan.md", "nothing here", pair(first)))
    r = api.post(f"{base}/versions/redact", ada, {"memory": change("conversation/plan.md", 0, v1)})
    assert r.status_code == 200, r.text
    assert where(secret) == []
    # And the keyed write's replay still answers as one, without the text, saying so
    again = replay(api.post(base, ada, body, headers=keyed(key)))
    assert again["memory"]["content"] is None and again["text_withheld"] == ["memory.content"]
    assert {k: v for k, v in again["memory"].items() if k != "content"} == {
        k: v for k, v in first.json()["memory"].items() if k != "content"
    }
    assert where(secret) == []


def test_a_model_tools_keyed_write_replays_without_a_redacted_text(api: Api) -> None:
    ada = api.account()
    ws = api.workspace(ada)
    alpha = api.agent(ada, "alpha")
    api.member(ada, ws, alpha)
    conv = api.conversation(ada, ws, answering_agent_public_id=alpha.public_id)
    r = api.post(f"/workspaces/{ws}/conversations/{conv}/executions", alpha, {"execution": {}})
    assert r.status_code == 201, r.text
    ex = r.json()["execution"]["public_id"]
    secret, key = unique_secret(), uuid.uuid4().hex
    call = {"input": {"path": "conversation/tool.md", "content": secret, **NEW}}
    first = api.post(f"/executions/{ex}/tools/memory_write", alpha, call, headers=keyed(key))
    assert first.status_code == 200, first.text
    assert first.json()["data"]["content"] == secret
    assert replay(api.post(f"/executions/{ex}/tools/memory_write", alpha, call, headers=keyed(key))) == first.json()
    data = first.json()["data"]
    base = conv_base(ws, conv)
    v1 = created(api.write(ada, base, "conversation/tool.md", "clean", (data["public_id"], data["lock_version"])))
    assert api.post(f"{base}/versions/redact", ada, {"memory": change("conversation/tool.md", 0, v1)}).ok
    assert where(secret) == []
    again = replay(api.post(f"/executions/{ex}/tools/memory_write", alpha, call, headers=keyed(key)))
    assert again["data"]["content"] is None and again["text_withheld"] == ["data.content"]
    assert again["content"] == first.json()["content"]  # the sentence for the model names no text


# ---- Memory files: a version redacted -----------------------------------------------------------------------


def test_a_redacted_memory_file_version_is_nowhere_and_its_keyed_write_replays_without_it(api: Api) -> None:
    ada = api.account()
    made = api.post("/memories", ada, {"memory": {"name": "vault", "description": "keys"}})
    assert made.status_code == 201, made.text
    mem = made.json()["memory"]["memory_id"]
    secret, key = unique_secret(), uuid.uuid4().hex
    body = {"file": {"path": "keys.md", "content": secret, **NEW}}
    first = api.post(f"/memories/{mem}/files", ada, body, headers=keyed(key))
    assert first.status_code == 201, first.text
    f0 = first.json()["file"]
    nxt = {"file": {"path": "keys.md", "content": "rotated", **expect((f0["public_id"], f0["lock_version"]))}}
    f1 = api.post(f"/memories/{mem}/files", ada, nxt).json()["file"]
    redact = {"path": "keys.md", "lock_version": 0, **expect((f1["public_id"], f1["lock_version"]))}
    r = api.post(f"/memories/{mem}/files/versions/redact", ada, {"file": redact}, headers=keyed(uuid.uuid4().hex))
    assert r.status_code == 200, r.text
    assert where(secret) == []
    again = replay(api.post(f"/memories/{mem}/files", ada, body, headers=keyed(key)))
    assert again["file"]["content"] is None and again["text_withheld"] == ["file.content"]
    assert again["file"]["public_id"] == f0["public_id"]
    assert where(secret) == []


# ---- records: deleted ---------------------------------------------------------------------------------------


def test_a_deleted_record_is_nowhere_and_its_keyed_append_replays_without_it(api: Api) -> None:
    ada = api.account()
    ws = api.workspace(ada)
    url = f"/workspaces/{ws}/records"
    secret, key = unique_secret(), uuid.uuid4().hex
    body = {"record": {"type": "fact", "content": f"The staging password is {secret}."}}
    first = api.post(url, ada, body, headers=keyed(key))
    assert first.status_code == 201, first.text
    rec = first.json()["record"]
    assert replay(api.post(url, ada, body, headers=keyed(key))) == first.json()
    gone = api.post(f"{url}/{rec['public_id']}/delete", ada, {"record": {"expected_lock_version": rec["lock_version"]}})
    assert gone.status_code == 204, gone.text
    assert where(secret) == []
    again = replay(api.post(url, ada, body, headers=keyed(key)))
    assert again["record"]["content"] is None and again["text_withheld"] == ["record.content"]
    assert again["record"]["public_id"] == rec["public_id"]
    assert where(secret) == []


# ---- store entries: deleted ---------------------------------------------------------------------------------


def test_a_deleted_store_entry_is_nowhere_and_its_keyed_write_replays_without_it(api: Api) -> None:
    ada, ws, conv = api.room()
    url = f"/workspaces/{ws}/conversations/{conv}/store_entries"
    secret, key = unique_secret(), uuid.uuid4().hex
    body = {"entry": {"key": "draft", "value": {"note": secret}, "expected_lock_version": None}}
    first = api.post(url, ada, body, headers=keyed(key))
    assert first.status_code == 201, first.text
    assert replay(api.post(url, ada, body, headers=keyed(key))) == first.json()
    lock = first.json()["entry"]["lock_version"]
    gone = api.post(f"{url}/delete", ada, {"entry": {"key": "draft", "expected_lock_version": lock}})
    assert gone.status_code == 204, gone.text
    assert where(secret) == []
    again = replay(api.post(url, ada, body, headers=keyed(key)))
    assert again["entry"]["value"] is None and again["text_withheld"] == ["entry.value"]
    assert where(secret) == []


def test_a_key_record_never_holds_the_text_even_while_it_is_live(api: Api) -> None:
    ada, ws, conv = api.room()
    secret, key = unique_secret(), uuid.uuid4().hex
    body = {"memory": {"path": "conversation/live.md", "content": secret, **NEW}}
    assert api.post(conv_base(ws, conv), ada, body, headers=keyed(key)).status_code == 201
    # The text is where it belongs (its object) and nowhere else: no item of the table holds it
    assert [w for w in where(secret) if w.startswith("item")] == []
    assert len([w for w in where(secret) if w.startswith("object")]) == 1


def test_a_replay_by_someone_who_lost_the_memory_reads_nothing_again(api: Api) -> None:
    """The re-read passes the read's own checks: a caller no longer in the Access panel gets the key's
    answer without the file's text (the key is theirs; the Memory is not any more)."""
    ada = api.account()
    bob = api.human(ada, "bob")
    mem = api.post("/memories", ada, {"memory": {"name": "vault", "description": "keys"}}).json()["memory"]["memory_id"]
    secret, key = unique_secret(), uuid.uuid4().hex
    body = {"file": {"path": "keys.md", "content": secret, **NEW}}
    first = api.post(f"/memories/{mem}/files", bob, body, headers=keyed(key))
    assert first.status_code == 201, first.text
    panel: dict[str, Any] = {"memory": {"access": {"humans": [], "workspaces": []}}}
    assert api.call("PATCH", f"/memories/{mem}", ada, panel).status_code == 200
    again = replay(api.post(f"/memories/{mem}/files", bob, body, headers=keyed(key)))
    assert again["file"]["content"] is None and again["text_withheld"] == ["file.content"]
    assert code(api.post(f"/memories/{mem}/files/show", bob, {"file": {"path": "keys.md"}})) == (404, "not_found")


# ---- helpers ------------------------------------------------------------------------------------------------

NEW = {"expected_public_id": None, "expected_lock_version": None}


def expect(p: tuple[str, int]) -> dict[str, Any]:
    return {"expected_public_id": p[0], "expected_lock_version": p[1]}


def change(path: str, lock_version: int, p: tuple[str, int]) -> dict[str, Any]:
    return {"path": path, "lock_version": lock_version, **expect(p)}
