"""The DynamoDB + S3 store against moto in-process, serialised: conditions, batching, caching, refusals.

The `store` fixture (tests/unit/conftest.py) is an empty table and bucket built from template.yaml.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from agent_memory.api.errors import ApiError
from agent_memory.core.ids import now_iso, sha256_hex, uuid7
from agent_memory.core.model import (
    MAX_DOCUMENTS_PER_ANCHOR,
    Anchor,
    Author,
    Conversation,
    ConversationBump,
    Document,
    DocumentChange,
    Held,
    Meter,
    WriteBudget,
)
from agent_memory.core.ports import Ref
from agent_memory.store import CACHE, DynamoStore
from agent_memory.store.content import ContentCache
from botocore.awsrequest import AWSResponse

from ..aws_errors import transaction_cancelled

T = TypeVar("T")


def stored(store: DynamoStore, ref: Ref[T]) -> T:
    """The row `ref` names, which the test has just written."""
    row = store.get(ref)
    assert row is not None
    return row


TEST_AUTHOR = Author("human", "test", "test")


@pytest.fixture
def calls(store: DynamoStore) -> Iterator[list[str]]:
    """Every AWS request the store sends, as 'dynamodb.GetItem', 's3.GetObject', ..."""
    seen: list[str] = []

    def hook(event_name: str, **_: Any) -> None:
        seen.append(event_name.removeprefix("before-send."))

    clients = (store.ddb, store.s3)
    for c in clients:
        c.meta.events.register("before-send", hook, unique_id="test-store-calls")
    yield seen
    for c in clients:
        c.meta.events.unregister("before-send", unique_id="test-store-calls")


def conversation(store: DynamoStore) -> Conversation:
    conv = Conversation(uuid7(), uuid7(), uuid7(), uuid7(), now_iso())
    store.create_conversation(conv)
    return conv


def version(
    store: DynamoStore, anchor: Anchor, rest: str, text: str, public_id: str | None = None, lock_version: int = 0
) -> Document:
    """A new immutable content version in S3 and the pointer row that would reference it."""
    public_id = public_id or uuid7()
    key = f"content/{public_id}/{uuid7()}"
    store.put_content(key, text)
    data = text.encode()
    return Document(
        anchor, rest, public_id, lock_version, len(data), sha256_hex(data), None, now_iso(), key, TEST_AUTHOR
    )


def create(
    store: DynamoStore, anchor: Anchor, rest: str, text: str = "x", bump: ConversationBump | None = None
) -> Document:
    doc = version(store, anchor, rest, text)
    store.commit(DocumentChange(anchor, rest, None, doc, bump))
    return doc


def pointer(store: DynamoStore, anchor: Anchor, rest: str) -> Document | None:
    row: Document | None = store.get_many([Ref.document(anchor, rest)])[Ref.document(anchor, rest)]
    return row


def meta_count(store: DynamoStore, anchor: Anchor) -> int | None:
    item = store.ddb.get_item(
        TableName=store.table, Key={"pk": {"S": f"ANCHOR#{anchor.key}"}, "sk": {"S": "#META"}}, ConsistentRead=True
    ).get("Item")
    return None if item is None else int(item["doc_count"]["N"])


def content_keys(store: DynamoStore) -> set[str]:
    resp = store.s3.list_objects_v2(Bucket=store.bucket, Prefix="content/")
    return {o["Key"] for o in resp.get("Contents", [])}


def refusal(store: DynamoStore, change: DocumentChange) -> str:
    with pytest.raises(ApiError) as info:
        store.commit(change)
    return info.value.code


# ---- conditional commits ---------------------------------------------------------------------------


@pytest.mark.parametrize("with_bump", [False, True])
def test_a_refused_create_leaves_the_pointer_and_at_most_an_unreferenced_object(
    store: DynamoStore, with_bump: bool
) -> None:
    # Given a document that exists (committed alone, or in a transaction with a revision bump)
    conv = conversation(store)
    anchor = Anchor("conversation", conv.public_id)
    bump = ConversationBump(conv.public_id) if with_bump else None
    original = create(store, anchor, "plan.md", "first", bump)
    # When a second writer stores its version and then tries to create the same path
    late = version(store, anchor, "plan.md", "second")
    assert refusal(store, DocumentChange(anchor, "plan.md", None, late, bump)) == "stale_object"
    # Then the pointer is exactly as it was, the count and revision did not move, and the refused
    # version is an object nothing references
    assert pointer(store, anchor, "plan.md") == original
    assert meta_count(store, anchor) == 1
    assert stored(store, Ref.conversation(conv.public_id)).context_revision == (1 if with_bump else 0)
    assert content_keys(store) == {original.content_key, late.content_key}
    assert [d.content_key for d in store.list_documents(anchor)] == [original.content_key]


@pytest.mark.parametrize("with_bump", [False, True])
def test_replace_and_delete_need_the_current_pair(store: DynamoStore, with_bump: bool) -> None:
    conv = conversation(store)
    anchor = Anchor("conversation", conv.public_id)
    bump = ConversationBump(conv.public_id) if with_bump else None
    v0 = create(store, anchor, "plan.md", "v0", bump)
    # A replace with a wrong id, a wrong version, or against an absent path changes nothing
    for expected, rest in [((uuid7(), 0), "plan.md"), ((v0.public_id, 1), "plan.md"), ((v0.public_id, 0), "gone.md")]:
        new = version(store, anchor, rest, "nope", expected[0], expected[1] + 1)
        assert refusal(store, DocumentChange(anchor, rest, expected, new, bump)) == "stale_object"
        assert refusal(store, DocumentChange(anchor, rest, expected, None, bump)) == "stale_object"
    assert pointer(store, anchor, "plan.md") == v0
    assert pointer(store, anchor, "gone.md") is None
    assert meta_count(store, anchor) == 1
    # The current pair replaces, then deletes, and the count follows
    v1 = version(store, anchor, "plan.md", "v1", v0.public_id, 1)
    store.commit(DocumentChange(anchor, "plan.md", (v0.public_id, 0), v1, bump))
    assert pointer(store, anchor, "plan.md") == v1
    assert refusal(store, DocumentChange(anchor, "plan.md", (v0.public_id, 0), None, bump)) == "stale_object"
    store.commit(DocumentChange(anchor, "plan.md", (v1.public_id, 1), None, bump))
    assert pointer(store, anchor, "plan.md") is None
    assert meta_count(store, anchor) == 0
    assert stored(store, Ref.conversation(conv.public_id)).context_revision == (3 if with_bump else 0)


def test_a_recreated_path_is_not_the_row_that_was_read(store: DynamoStore) -> None:
    # Given a document read at (id A, 0), then deleted and created again at the same path
    anchor = Anchor("workspace", uuid7())
    first = create(store, anchor, "plan.md")
    store.commit(DocumentChange(anchor, "plan.md", (first.public_id, 0), None))
    again = create(store, anchor, "plan.md")
    # When a writer holding the first pair replaces it, then it is stale: same path and version, new identity
    late = version(store, anchor, "plan.md", "late", first.public_id, 1)
    assert refusal(store, DocumentChange(anchor, "plan.md", (first.public_id, 0), late)) == "stale_object"
    assert pointer(store, anchor, "plan.md") == again


@pytest.mark.parametrize(
    ("anchor_scope", "with_bump", "verb", "requests"),
    [
        ("conversation", True, "create", ["dynamodb.TransactWriteItems"]),
        ("conversation", True, "replace", ["dynamodb.TransactWriteItems"]),
        ("conversation", True, "delete", ["dynamodb.TransactWriteItems"]),
        ("workspace", False, "create", ["dynamodb.TransactWriteItems"]),
        ("workspace", False, "replace", ["dynamodb.PutItem"]),
        ("workspace", False, "delete", ["dynamodb.TransactWriteItems"]),
    ],
)
def test_every_commit_is_one_dynamodb_request(
    store: DynamoStore, calls: list[str], anchor_scope: str, with_bump: bool, verb: str, requests: list[str]
) -> None:
    conv = conversation(store)
    anchor = Anchor(anchor_scope, conv.public_id if anchor_scope == "conversation" else conv.workspace_id)
    bump = ConversationBump(conv.public_id) if with_bump else None
    existing = create(store, anchor, "plan.md") if verb != "create" else None
    new = (
        None
        if verb == "delete"
        else version(store, anchor, "plan.md", "new", *((existing.public_id, 1) if existing else (None, 0)))
    )
    expected = (existing.public_id, 0) if existing else None
    calls.clear()
    store.commit(DocumentChange(anchor, "plan.md", expected, new, bump))
    assert calls == requests


# ---- the refusal explained from the cancellation reasons --------------------------------------------


def test_a_full_scope_refuses_a_create_as_memory_full(store: DynamoStore) -> None:
    # Given an anchor whose counter is at the bound
    conv = conversation(store)
    anchor = Anchor("conversation", conv.public_id)
    bump = ConversationBump(conv.public_id)
    create(store, anchor, "kept.md", bump=bump)
    store.ddb.update_item(
        TableName=store.table,
        Key={"pk": {"S": f"ANCHOR#{anchor.key}"}, "sk": {"S": "#META"}},
        UpdateExpression="SET doc_count = :n",
        ExpressionAttributeValues={":n": {"N": str(MAX_DOCUMENTS_PER_ANCHOR)}},
    )
    # When a new path is created, then the scope is full and nothing moved
    new = version(store, anchor, "one-more.md", "x")
    assert refusal(store, DocumentChange(anchor, "one-more.md", None, new, bump)) == "memory_full"
    assert pointer(store, anchor, "one-more.md") is None
    assert meta_count(store, anchor) == MAX_DOCUMENTS_PER_ANCHOR
    assert stored(store, Ref.conversation(conv.public_id)).context_revision == 1
    # And creating a path that already exists in a full scope is stale rather than full
    late = version(store, anchor, "kept.md", "x")
    assert refusal(store, DocumentChange(anchor, "kept.md", None, late, bump)) == "stale_object"
    # And a replace in a full scope is not counted, so it still commits
    kept = pointer(store, anchor, "kept.md")
    assert kept is not None
    v1 = version(store, anchor, "kept.md", "y", kept.public_id, 1)
    store.commit(DocumentChange(anchor, "kept.md", (kept.public_id, 0), v1, bump))
    assert meta_count(store, anchor) == MAX_DOCUMENTS_PER_ANCHOR


@pytest.mark.parametrize("verb", ["create", "replace", "delete"])
def test_an_archived_conversation_refuses_as_conversation_archived(store: DynamoStore, verb: str) -> None:
    conv = conversation(store)
    anchor = Anchor("conversation", conv.public_id)
    existing = create(store, anchor, "plan.md", bump=ConversationBump(conv.public_id))
    store.update_conversation(conv.public_id, archive=True)
    rest = "new.md" if verb == "create" else "plan.md"
    expected = None if verb == "create" else (existing.public_id, 0)
    new = (
        None
        if verb == "delete"
        else version(store, anchor, rest, "x", *((existing.public_id, 1) if expected else (None, 0)))
    )
    change = DocumentChange(anchor, rest, expected, new, ConversationBump(conv.public_id))
    assert refusal(store, change) == "conversation_archived"
    assert pointer(store, anchor, "plan.md") == existing
    assert meta_count(store, anchor) == 1
    assert stored(store, Ref.conversation(conv.public_id)).context_revision == 1


def test_a_moved_revision_refuses_as_stale_object(store: DynamoStore) -> None:
    conv = conversation(store)
    anchor = Anchor("conversation", conv.public_id)
    create(store, anchor, "a.md", bump=ConversationBump(conv.public_id))
    # When a writer sends the revision it saw before that write
    new = version(store, anchor, "b.md", "x")
    change = DocumentChange(anchor, "b.md", None, new, ConversationBump(conv.public_id, expected_context_revision=0))
    with pytest.raises(ApiError) as info:
        store.commit(change)
    # Then it is stale, the message says why, and nothing moved
    assert info.value.code == "stale_object"
    assert "context_revision" in info.value.message
    assert pointer(store, anchor, "b.md") is None
    assert meta_count(store, anchor) == 1
    # And with the current revision the same change commits
    store.commit(DocumentChange(anchor, "b.md", None, new, ConversationBump(conv.public_id, 1)))
    assert stored(store, Ref.conversation(conv.public_id)).context_revision == 2


def test_a_missing_conversation_refuses_as_not_found(store: DynamoStore) -> None:
    anchor = Anchor("conversation", uuid7())
    new = version(store, anchor, "a.md", "x")
    assert refusal(store, DocumentChange(anchor, "a.md", None, new, ConversationBump(anchor.owner_id))) == "not_found"
    assert pointer(store, anchor, "a.md") is None
    assert meta_count(store, anchor) is None


# ---- refusals named from the cancellation reasons real DynamoDB returns --------------------------------
# moto never cancels with TransactionConflict, and cannot fail chosen items: these tests answer the
# store's TransactWriteItems as DynamoDB does, failing the items picked by their key, and check the
# refusal the store names from the reasons alone.

Reason = dict[str, Any]
FAILED: Reason = {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"}
CONFLICT: Reason = {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}


def role_of(key: dict[str, Any]) -> str:
    """Which item of a commit a key is, by the table layout (store/keys.py)."""
    pk, sk = key["pk"]["S"], key["sk"]["S"]
    if sk.startswith("DOC#"):
        return "document"
    if sk == "#META":
        return "meta"
    if pk.startswith("CONV#"):
        return "conversation"
    # No RATE# item: the write budget's meters are spent before a commit, never in it.
    raise AssertionError(f"unexpected item {pk} {sk}")


def cancel_transactions(store: DynamoStore, fail: dict[str, Reason]) -> list[list[str]]:
    """Answer every TransactWriteItems with DynamoDB's cancellation: `fail[role]` for those items, "None" else.

    Returns the roles of the items of each transaction answered.
    """
    answered: list[list[str]] = []

    def cancel(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        ops = json.loads(params["body"])["TransactItems"]
        roles = [role_of(body.get("Key") or body["Item"]) for op in ops for body in op.values()]
        answered.append(roles)
        reasons = [fail.get(role, {"Code": "None"}) for role in roles]
        return transaction_cancelled(reasons)

    store.ddb.meta.events.register("before-call.dynamodb.TransactWriteItems", cancel, unique_id="test-cancel")
    return answered


@pytest.fixture
def cancelling(store: DynamoStore) -> Iterator[Callable[[dict[str, Reason]], list[list[str]]]]:
    yield lambda fail: cancel_transactions(store, fail)
    store.ddb.meta.events.unregister("before-call.dynamodb.TransactWriteItems", unique_id="test-cancel")


def conversation_item(*, archived: bool, context_revision: int) -> dict[str, Any]:
    """The old conversation item DynamoDB returns with a failed condition (ALL_OLD)."""
    return {
        "pk": {"S": f"CONV#{uuid7()}"},
        "sk": {"S": "CONV"},
        "archived": {"BOOL": archived},
        "context_revision": {"N": str(context_revision)},
    }


def _doc(anchor: Anchor) -> Document:
    return Document(anchor, "a.md", uuid7(), 0, 1, sha256_hex(b"x"), None, now_iso(), "content/k", TEST_AUTHOR)


def a_create(bump: bool = False, budget: bool = False) -> DocumentChange:
    anchor = Anchor("conversation", uuid7())
    return DocumentChange(
        anchor,
        "a.md",
        None,
        _doc(anchor),
        ConversationBump(anchor.owner_id) if bump else None,
        WriteBudget((Meter("principal", uuid7(), 5),)) if budget else None,
    )


def a_delete(bump: bool = False) -> DocumentChange:
    anchor = Anchor("conversation", uuid7())
    return DocumentChange(anchor, "a.md", (uuid7(), 0), None, ConversationBump(anchor.owner_id) if bump else None)


@pytest.mark.parametrize(
    ("change", "fail", "code"),
    [
        # The document's own condition: the path exists, or is not at the pair the writer read
        (a_create(), {"document": FAILED}, "stale_object"),
        (a_delete(), {"document": FAILED}, "stale_object"),
        # The counter's condition on a create: the scope is full
        (a_create(), {"meta": FAILED}, "memory_full"),
        # A path that exists in a full scope is stale rather than full
        (a_create(), {"document": FAILED, "meta": FAILED}, "stale_object"),
    ],
)
def test_a_cancelled_commit_is_named_by_the_item_that_failed(
    store: DynamoStore,
    calls: list[str],
    cancelling: Callable[[dict[str, Reason]], list[list[str]]],
    change: DocumentChange,
    fail: dict[str, Reason],
    code: str,
) -> None:
    # Given DynamoDB cancels the commit's transaction because of the named items
    answered = cancelling(fail)
    # When the change is committed, then the refusal is named from the reasons, without another request
    assert refusal(store, change) == code
    assert len(answered) == 1 and set(fail) <= set(answered[0])
    assert calls == []


@pytest.mark.parametrize(
    ("old", "code", "says"),
    [
        (None, "not_found", "does not exist"),
        (conversation_item(archived=True, context_revision=4), "conversation_archived", "archived"),
        (conversation_item(archived=False, context_revision=4), "stale_object", "context_revision is 4"),
    ],
)
def test_a_failed_conversation_item_is_named_from_its_old_item(
    store: DynamoStore,
    cancelling: Callable[[dict[str, Reason]], list[list[str]]],
    old: dict[str, Any] | None,
    code: str,
    says: str,
) -> None:
    # Given the conversation item failed (with the old item DynamoDB returned, if there was one), and the
    # document and counter failed too
    reason = FAILED | ({"Item": old} if old else {})
    cancelling({"conversation": reason, "document": FAILED, "meta": FAILED})
    # Then the conversation names the refusal
    with pytest.raises(ApiError) as info:
        store.commit(a_create(bump=True))
    assert info.value.code == code
    assert says in info.value.message


def test_an_archived_conversation_is_stale_when_the_writer_did_not_refuse_archived(
    store: DynamoStore, cancelling: Callable[[dict[str, Reason]], list[list[str]]]
) -> None:
    cancelling({"conversation": FAILED | {"Item": conversation_item(archived=True, context_revision=2)}})
    anchor = Anchor("conversation", uuid7())
    bump = ConversationBump(anchor.owner_id, expected_context_revision=1, refuse_archived=False)
    assert refusal(store, DocumentChange(anchor, "a.md", None, _doc(anchor), bump)) == "stale_object"


def test_a_spent_write_budget_is_named_rate_limited_before_the_commit_is_sent(
    store: DynamoStore, cancelling: Callable[[dict[str, Reason]], list[list[str]]]
) -> None:
    # Given a caller that has spent its budget of 5 this minute, and a create whose document, counter and
    # conversation would all fail their conditions
    change = a_create(bump=True, budget=True)
    assert change.budget is not None
    for _ in range(5):
        store.spend(change.budget)
    old = conversation_item(archived=True, context_revision=1)
    answered = cancelling({"document": FAILED, "meta": FAILED, "conversation": FAILED | {"Item": old}})
    # Then the caller is told to wait, not to re-read, and the commit was never sent
    with pytest.raises(ApiError) as info:
        store.commit(change)
    assert info.value.code == "rate_limited"
    assert 0 < info.value.details["retry_after_seconds"] <= 60
    assert "budget of 5 writes" in info.value.message
    assert answered == []


@pytest.mark.parametrize("role", ["document", "meta", "conversation"])
def test_a_transaction_conflict_is_never_blamed_on_the_item(
    store: DynamoStore,
    cancelling: Callable[[dict[str, Reason]], list[list[str]]],
    role: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given real DynamoDB cancels every send of the commit on a concurrent transaction touching one of its
    # items (moto never does)
    from agent_memory.store.commit import PACING

    monkeypatch.setattr(PACING, "sleep", lambda _: None)
    answered = cancelling({role: CONFLICT})
    # Then it is contention, whichever item it was: not a missing conversation, a full scope or a stale
    # pair. It was retried (tests/unit/test_store_contention.py), then answered as busy.
    with pytest.raises(ApiError) as info:
        store.commit(a_create(bump=True, budget=True))
    assert info.value.code == "storage_busy"
    assert len(answered) == 4


def test_a_failed_condition_outranks_a_conflict(
    store: DynamoStore, cancelling: Callable[[dict[str, Reason]], list[list[str]]]
) -> None:
    cancelling({"document": CONFLICT, "meta": FAILED})
    assert refusal(store, a_create()) == "memory_full"


# ---- batch reads -------------------------------------------------------------------------------------


def test_get_many_maps_absent_refs_to_none_and_batches_past_100(store: DynamoStore, calls: list[str]) -> None:
    # Given 70 conversations that exist and 40 that do not
    present = [conversation(store) for _ in range(70)]
    absent = [uuid7() for _ in range(40)]
    refs = [Ref.conversation(c.public_id) for c in present] + [Ref.conversation(a) for a in absent]
    refs += refs[:5]  # a duplicate ref is fetched once
    calls.clear()
    # When all 110 (plus duplicates) are fetched at once
    got = store.get_many(refs)
    # Then each maps to its row or to None, in BatchGetItem requests of at most 100 keys
    assert set(got) == set(refs)
    assert all(got[Ref.conversation(c.public_id)] == c for c in present)
    assert all(got[Ref.conversation(a)] is None for a in absent)
    assert calls == ["dynamodb.BatchGetItem", "dynamodb.BatchGetItem"]


def test_get_many_of_mixed_kinds_and_of_one_ref(store: DynamoStore, calls: list[str]) -> None:
    conv = conversation(store)
    anchor = Anchor("conversation", conv.public_id)
    doc = create(store, anchor, "a.md")
    calls.clear()
    got = store.get_many(
        [
            Ref.conversation(conv.public_id),
            Ref.document(anchor, "a.md"),
            Ref.document(anchor, "b.md"),
            Ref.workspace(conv.workspace_id),
        ]
    )
    assert list(got.values()) == [conv, doc, None, None]
    assert calls == ["dynamodb.BatchGetItem"]
    calls.clear()
    assert store.get_many([Ref.document(anchor, "b.md")]) == {Ref.document(anchor, "b.md"): None}
    assert store.get_many([]) == {}
    assert calls == ["dynamodb.GetItem"]


# ---- content -----------------------------------------------------------------------------------------


def held(key: str, text: str) -> Held:
    """A row's view of the object at `key`: the hash of `text`, recorded when it was written."""
    return Held(key, sha256_hex(text.encode("utf-8")), "conversation/x.md", 0)


def test_a_second_read_of_a_content_version_makes_no_s3_request(store: DynamoStore, calls: list[str]) -> None:
    # Given a content version stored by another process (so this one has not cached it)
    key = f"content/{uuid7()}/{uuid7()}"
    store.put_content(key, "héllo\nworld")
    CACHE.clear()
    calls.clear()
    # When it is read twice, then S3 is asked once
    assert store.read_content(held(key, "héllo\nworld")) == "héllo\nworld"
    assert store.read_content(held(key, "héllo\nworld")) == "héllo\nworld"
    assert calls == ["s3.GetObject"]
    # And the writer's own process never has to read back what it wrote
    other = f"content/{uuid7()}/{uuid7()}"
    store.put_content(other, "mine")
    calls.clear()
    assert store.read_contents([held(key, "héllo\nworld"), held(other, "mine"), held(key, "héllo\nworld")]).texts == {
        key: "héllo\nworld",
        other: "mine",
    }
    assert calls == []


def test_read_contents_fetches_each_missing_key_once(store: DynamoStore, calls: list[str]) -> None:
    keys = [f"content/{uuid7()}/{uuid7()}" for _ in range(5)]
    for i, k in enumerate(keys):
        store.put_content(k, f"doc {i}")
    CACHE.clear()
    calls.clear()
    wanted = [held(k, f"doc {i}") for i, k in enumerate(keys)]
    assert store.read_contents(wanted + wanted).texts == {k: f"doc {i}" for i, k in enumerate(keys)}
    assert sorted(calls) == ["s3.GetObject"] * 5


def test_each_key_is_fetched_once_even_when_the_cache_is_smaller_than_the_working_set(
    store: DynamoStore, calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given 20 stored versions and a cache with room for only 2 of them
    keys = [f"content/{uuid7()}/{uuid7()}" for _ in range(20)]
    for i, k in enumerate(keys):
        store.put_content(k, f"document {i:02d}")
    monkeypatch.setattr(CACHE, "_limit", 2 * (len("document 00") * 4 + 100))
    CACHE.clear()
    calls.clear()
    # When all of them are read in one call
    wanted = [held(k, f"document {i:02d}") for i, k in enumerate(keys)]
    got = store.read_contents(wanted).texts
    # Then every text arrives, and S3 was asked once per key: nothing evicted was fetched again
    assert got == {k: f"document {i:02d}" for i, k in enumerate(keys)}
    assert sorted(calls) == ["s3.GetObject"] * 20
    # And the futures' form answers the same, each fetched once, and may be cancelled unread
    CACHE.clear()
    calls.clear()
    futures = store.fetch_contents(wanted)
    assert {k: f.result() for k, f in futures.items()} == got
    assert sorted(calls) == ["s3.GetObject"] * 20


def test_a_content_key_is_write_once(store: DynamoStore) -> None:
    key = f"content/{uuid7()}/{uuid7()}"
    store.put_content(key, "first")
    with pytest.raises(ApiError) as info:
        store.put_content(key, "second")
    assert info.value.code == "already_exists"
    CACHE.clear()
    assert store.read_content(held(key, "first")) == "first"


def test_bytes_that_differ_from_the_recorded_hash_are_refused_and_never_cached(
    store: DynamoStore, calls: list[str]
) -> None:
    # Given a version stored, then its object replaced behind the store's back
    key = f"content/{uuid7()}/{uuid7()}"
    store.put_content(key, "ship on friday")
    store.s3.put_object(Bucket=store.bucket, Key=key, Body=b"ship on sunday")
    CACHE.clear()
    calls.clear()
    # When it is read with the hash its version recorded, Then it is refused, naming the path and version
    with pytest.raises(ApiError) as info:
        store.read_content(held(key, "ship on friday"))
    assert info.value.code == "memory_content_corrupt"
    assert info.value.details == {"path": "conversation/x.md", "lock_version": 0}
    # And the batch readers leave it out and name it; the futures' form raises it
    assert store.read_contents([held(key, "ship on friday")]).corrupt == {key}
    with pytest.raises(ApiError):
        store.fetch_contents([held(key, "ship on friday")])[key].result()
    # And nothing was cached: every read asked S3 again
    assert calls == ["s3.GetObject"] * 3


def test_a_cached_text_is_served_only_to_the_hash_it_was_verified_with(store: DynamoStore, calls: list[str]) -> None:
    key = f"content/{uuid7()}/{uuid7()}"
    store.put_content(key, "alpha")
    calls.clear()
    # A row naming the key with another hash (a table edited by hand) is refused from the cache too
    with pytest.raises(ApiError) as info:
        store.read_content(held(key, "beta"))
    assert info.value.code == "memory_content_corrupt"
    assert store.read_content(held(key, "alpha")) == "alpha"
    assert calls == []


def test_the_content_cache_is_bounded_in_bytes_and_evicts_least_recently_used() -> None:
    budget, text = 100_000, ("x" * 10_000, "digest")

    def run(n: int) -> ContentCache:
        # Two entries, the first one read again, then n newer ones
        cache = ContentCache(max_bytes=budget)
        cache.put("old", text)
        cache.put("stale", text)
        assert cache.get("old") == text
        for i in range(n):
            cache.put(f"k{i}", text)
        return cache

    # Find how many newer entries first push the least recently used one out (checking once per run:
    # a read would refresh it)
    n = next((n for n in range(1, 100) if run(n).get("stale") is None), None)
    assert n is not None, "nothing was ever evicted"
    # Then at that moment the refreshed entry and the newest one are still there
    cache = run(n)
    assert cache.get("old") == text
    assert cache.get(f"k{n - 1}") == text
    # And however much is put, what it keeps never exceeds the budget (a character is at least a byte)
    cache = run(n + 30)
    kept = [k for k in ["old", "stale", *(f"k{i}" for i in range(n + 30))] if cache.get(k) is not None]
    assert 0 < len(kept) * len(text[0]) <= budget
    assert "old" not in kept and "stale" not in kept


def test_the_content_cache_keeps_the_first_text_of_a_key() -> None:
    cache = ContentCache(max_bytes=1000)
    cache.put("k", ("a", "ha"))
    cache.put("k", ("b", "hb"))  # keys are immutable: a second put cannot change what a key means
    assert cache.get("k") == ("a", "ha")
    cache.clear()
    assert cache.get("k") is None
