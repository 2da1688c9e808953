"""A keyed request's record rides in its decisive commit: what DynamoDB's answers about that record mean.

moto never reports contention, so these tests answer the commit the way real DynamoDB does (see
test_store_contention.py) with the record as the transaction's last item.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from agent_memory.api.errors import ApiError
from agent_memory.core import idempotency
from agent_memory.core.idempotency import Answer, Replayed, UnitOfWork
from agent_memory.core.ids import uuid7
from agent_memory.core.model import Anchor, DocumentChange
from agent_memory.core.ports import Ref
from agent_memory.store import DynamoStore
from agent_memory.store.commit import PACING

from .test_store import pointer, version
from .test_store_contention import Stage, cancellation, paced, stage  # noqa: F401

ANSWER = Answer(201, {"memory": {"path": "conversation/a.md"}})


@pytest.fixture
def guard() -> Iterator[UnitOfWork]:
    """A keyed request in flight whose answer has been settled, as a service leaves it before its commit."""
    g = idempotency.unit_of_work("0199aaaa-0000-7000-8000-00000000000a", "key-1", "print-1")
    g.view = lambda result: result
    g.answer = ANSWER
    with idempotency.bound(g):
        yield g


def _create(store: DynamoStore) -> tuple[Anchor, Callable[[], None]]:
    anchor = Anchor("conversation", uuid7())
    doc = version(store, anchor, "a.md", "text")
    return anchor, lambda: store.commit(DocumentChange(anchor, "a.md", None, doc))


def _record(store: DynamoStore, g: UnitOfWork) -> idempotency.Record | None:
    found: idempotency.Record | None = store.get_many([Ref.idempotency(g.scope, g.key_digest)])[
        Ref.idempotency(g.scope, g.key_digest)
    ]
    return found


def test_the_record_commits_with_the_change_it_guards(store: DynamoStore, guard: UnitOfWork) -> None:
    # When the keyed commit is sent
    anchor, write = _create(store)
    write()
    # Then the document and the record landed together, and the record holds the settled answer
    assert pointer(store, anchor, "a.md") is not None
    record = _record(store, guard)
    assert record is not None and record.answer == ANSWER and record.fingerprint == "print-1"
    assert guard.stored


def test_a_commit_refused_for_its_own_condition_leaves_no_record(store: DynamoStore, guard: UnitOfWork) -> None:
    # Given the path exists already, so a create is refused
    anchor, write = _create(store)
    with idempotency.bound(None):
        write()
    doc = version(store, anchor, "a.md", "other")
    # When a keyed create of the same path is sent, it is refused, and no record is left behind
    with pytest.raises(ApiError) as info:
        store.commit(DocumentChange(anchor, "a.md", None, doc))
    assert info.value.code == "stale_object"
    assert _record(store, guard) is None and not guard.stored


def test_a_keyed_change_whose_answer_was_never_settled_is_refused_before_it_is_sent(
    store: DynamoStore, guard: UnitOfWork
) -> None:
    # Given a keyed request whose service forgot to settle its answer before its decisive commit
    guard.answer = None
    anchor, write = _create(store)
    # When it commits, then nothing is sent: a change without its record would run twice on a retry
    with pytest.raises(RuntimeError, match="without settling"):
        write()
    assert pointer(store, anchor, "a.md") is None and _record(store, guard) is None


def test_a_duplicate_that_committed_first_is_this_requests_answer(store: DynamoStore, guard: UnitOfWork) -> None:
    # Given the same request (same key, same fingerprint) committed first under another send
    _, first = _create(store)
    first()
    guard.stored = False
    # When this send commits, its record's condition fails: the first one's answer is replayed
    _, second = _create(store)
    with pytest.raises(Replayed) as info:
        second()
    assert info.value.answer == ANSWER


def test_another_request_under_the_same_key_is_idempotency_conflict(store: DynamoStore, guard: UnitOfWork) -> None:
    _, first = _create(store)
    first()
    # Given a different request reusing the key
    guard.stored, guard.fingerprint = False, "print-2"
    anchor, second = _create(store)
    # Then its commit is refused as a conflict, and its change did not land
    with pytest.raises(ApiError) as info:
        second()
    assert (info.value.code, info.value.status) == ("idempotency_conflict", 409)
    assert pointer(store, anchor, "a.md") is None


def test_a_record_that_stays_contended_is_a_duplicate_in_progress(
    store: DynamoStore,
    guard: UnitOfWork,
    stage: Callable[[str], Stage],  # noqa: F811
    paced: list[float],  # noqa: F811
) -> None:
    # Given DynamoDB keeps cancelling the commit because the key's record is busy in another transaction
    anchor, write = _create(store)
    tx = stage("TransactWriteItems")
    tx.arm(lambda n: cancellation(["None"] * (n - 1) + ["TransactionConflict"]), times=1000)
    # When it is sent, then after the retries it is 409 idempotency_in_progress with a wait, not busy
    with pytest.raises(ApiError) as info:
        write()
    assert (info.value.code, info.value.status) == ("idempotency_in_progress", 409)
    assert info.value.details["retry_after_seconds"] == 1
    assert len(tx.sent) == PACING.retries + 1
    # And nothing landed
    assert pointer(store, anchor, "a.md") is None and _record(store, guard) is None


def test_contention_elsewhere_is_still_storage_busy(
    store: DynamoStore,
    guard: UnitOfWork,
    stage: Callable[[str], Stage],  # noqa: F811
    paced: list[float],  # noqa: F811
) -> None:
    _, write = _create(store)
    tx = stage("TransactWriteItems")
    tx.arm(lambda n: cancellation(["TransactionConflict"] + ["None"] * (n - 1)), times=1000)
    with pytest.raises(ApiError) as info:
        write()
    assert info.value.code == "storage_busy"
