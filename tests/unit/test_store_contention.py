"""Real DynamoDB refusals: contention is retried, only a failed condition is a refusal, every commit has a token.

moto never cancels a transaction with TransactionConflict or throttling, and never throttles a single
request. These tests answer the store's requests the way real DynamoDB does (a `before-call` hook that
returns DynamoDB's exact error shapes: TransactionCanceledException with one CancellationReasons entry per
item, or a single-request error), for every item position of every write transaction the store sends, and
let the request through to moto once the staged faults are spent.

The history's transactions are among them: a commit carrying its version record (and the record that
falls out of retention), a rollback's commit with the ConditionCheck on its source version, a redaction,
and a fork's transaction (the child, its pointer copies, the parent's `forked_at` and the child's `fork`
version records), or, for a fork too large for one, its two (the records, then the rest). A write budget is
spent before any of them, one UpdateItem per meter, never inside a transaction, and a retried transaction
never spends it again. A scenario whose transaction is not the first or the only one it sends names how
many go before and after it (`AROUND`).

The retry pacing's sleep is replaced (`paced`), so no test waits for real; the waits it asked for are kept.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any
from unittest import mock

import pytest
from agent_memory.api.errors import ApiError
from agent_memory.core.ids import now_iso, sha256_hex, uuid7
from agent_memory.core.model import (
    Account,
    Agent,
    Anchor,
    Author,
    Conversation,
    ConversationBump,
    Document,
    DocumentChange,
    Execution,
    Human,
    Member,
    Meter,
    Mount,
    TokenRow,
    Version,
    VersionCheck,
    Workspace,
    WriteBudget,
)
from agent_memory.core.ports import Ref
from agent_memory.store import DynamoStore, keys
from agent_memory.store import documents as store_documents
from agent_memory.store.commit import PACING
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ReadTimeoutError

from ..aws_errors import dynamodb_error, transaction_cancelled
from .test_store import conversation, meta_count, pointer, stored

CONTENTION = ["TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"]
SINGLE_CONTENTION = [
    "TransactionConflictException",
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
]
MESSAGES = {
    "TransactionConflict": "Transaction is ongoing for the item",
    "ThrottlingError": "Throughput exceeds the current capacity for one or more global secondary indexes.",
    "ProvisionedThroughputExceeded": "The level of configured provisioned throughput for the table was exceeded.",
    "RequestLimitExceeded": "Throughput exceeds the current throughput limit for your account.",
    "ConditionalCheckFailed": "The conditional request failed",
}


AUTHOR = Author("human", uuid7(), "test")

# `version` and `create` are this module's own: test_store.py's still give a Document its author as a
# string, which the Author model (with the version records) no longer is.


def version(
    store: DynamoStore, anchor: Anchor, rest: str, text: str, public_id: str | None = None, lock_version: int = 0
) -> Document:
    """A new immutable content version in S3 and the pointer row that would reference it."""
    public_id = public_id or uuid7()
    key = f"content/{public_id}/{uuid7()}"
    store.put_content(key, text)
    data = text.encode()
    return Document(anchor, rest, public_id, lock_version, len(data), sha256_hex(data), None, now_iso(), key, AUTHOR)


def create(
    store: DynamoStore, anchor: Anchor, rest: str, text: str = "x", bump: ConversationBump | None = None
) -> Document:
    doc = version(store, anchor, rest, text)
    store.commit(DocumentChange(anchor, rest, None, doc, bump))
    return doc


def recorded(doc: Document, operation: Any = "write", **extra: Any) -> Version:
    """The history record of the version `doc` points at, as a commit carries it."""
    return Version.of(doc, operation, time.time(), **extra)


def history(store: DynamoStore, anchor: Anchor, rest: str = "a.md") -> tuple[Document, Document]:
    """A document written twice through commits that record their versions: (v0, v1), v1 current."""
    v0 = version(store, anchor, rest, "first")
    store.commit(DocumentChange(anchor, rest, None, v0, version=recorded(v0)))
    v1 = version(store, anchor, rest, "second", v0.public_id, 1)
    store.commit(DocumentChange(anchor, rest, (v0.public_id, 0), v1, version=recorded(v1)))
    return v0, v1


def record(store: DynamoStore, anchor: Anchor, rest: str, lock_version: int) -> Version | None:
    ref = Ref.version(anchor, rest, lock_version)
    found: Version | None = store.get_many([ref])[ref]
    return found


def meter_count(store: DynamoStore, meter: Meter) -> int:
    """What a meter has counted this minute and the one before (a write may cross a minute's end before the
    check reads: its count is then in the earlier window)."""
    now = int(time.time() // 60)
    total = 0
    for minute in (now - 1, now):
        key = keys.rate(meter.subject, meter.key, minute)
        item = store.ddb.get_item(TableName=store.table, Key=keys.wire(key), ConsistentRead=True).get("Item")
        total += int(item["n"]["N"]) if item else 0
    return total


@pytest.fixture
def paced(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits the retry pacing asks for, with the largest jitter; nothing sleeps."""
    waits: list[float] = []
    monkeypatch.setattr(PACING, "sleep", waits.append)
    monkeypatch.setattr(PACING, "jitter", lambda: 1.0)
    return waits


_error = dynamodb_error


def cancellation(codes: list[str]) -> tuple[AWSResponse, dict[str, Any]]:
    """DynamoDB's answer to a cancelled TransactWriteItems: one reason per item, "None" for those that passed."""
    return transaction_cancelled([{"Code": c} if c == "None" else {"Code": c, "Message": MESSAGES[c]} for c in codes])


@dataclass
class Sent:
    """One TransactWriteItems the store sent: its items and token."""

    items: int
    token: str | None


class Stage:
    """Answer the first `times` sends of an operation with `answer(n_items)`, then let them reach moto."""

    def __init__(self, store: DynamoStore, operation: str) -> None:
        self.store = store
        self.operation = operation
        self.sent: list[Sent] = []
        self.answer: Callable[[int], tuple[AWSResponse, dict[str, Any]]] | None = None
        self.times = 0
        self.skip = 0

    def __call__(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        body = json.loads(params["body"])
        self.sent.append(Sent(len(body.get("TransactItems", [None])), body.get("ClientRequestToken")))
        if self.answer is not None and self.skip < len(self.sent) <= self.skip + self.times:
            return self.answer(self.sent[-1].items)
        return None

    def arm(self, answer: Callable[[int], tuple[AWSResponse, dict[str, Any]]], times: int, skip: int = 0) -> None:
        """Answer `times` sends with `answer`, after letting the first `skip` through."""
        self.sent.clear()
        self.answer, self.times, self.skip = answer, times, skip


@pytest.fixture
def stage(store: DynamoStore) -> Iterator[Callable[[str], Stage]]:
    made: list[Stage] = []

    def make(operation: str) -> Stage:
        s = Stage(store, operation)
        store.ddb.meta.events.register(f"before-call.dynamodb.{operation}", s, unique_id=f"stage-{operation}")
        made.append(s)
        return s

    yield make
    for s in made:
        store.ddb.meta.events.unregister(f"before-call.dynamodb.{s.operation}", unique_id=f"stage-{s.operation}")


# ---- every write transaction the store sends -----------------------------------------------------------
# Each scenario prepares its rows, then answers (write, check, refusals): `write` sends the transaction,
# `check` asserts its effect landed exactly once, `refusals[i]` is the code a failed condition on item i
# means (None for an item that carries no condition, which DynamoDB cannot fail).

Scenario = tuple[Callable[[], None], Callable[[], None], list[str | None]]


def _commit(store: DynamoStore, *, verb: str, bump: bool, budget: bool, scope: str = "conversation") -> Scenario:
    conv = conversation(store)
    anchor = Anchor(scope, conv.public_id if scope == "conversation" else conv.workspace_id)
    b = ConversationBump(conv.public_id) if bump else None
    w = WriteBudget((Meter("principal", uuid7(), 100),)) if budget else None
    existing = create(store, anchor, "a.md") if verb != "create" else None
    revision = stored(store, Ref.conversation(conv.public_id)).context_revision
    if verb == "create":
        change = DocumentChange(anchor, "a.md", None, version(store, anchor, "a.md", "new"), b, w)
    elif verb == "replace":
        assert existing is not None
        new = version(store, anchor, "a.md", "v1", existing.public_id, 1)
        change = DocumentChange(anchor, "a.md", (existing.public_id, 0), new, b, w)
    else:
        assert existing is not None
        change = DocumentChange(anchor, "a.md", (existing.public_id, 0), None, b, w)

    def check() -> None:
        assert pointer(store, anchor, "a.md") == change.new
        assert meta_count(store, anchor) == (0 if verb == "delete" else 1)
        assert stored(store, Ref.conversation(conv.public_id)).context_revision == revision + (1 if bump else 0)
        # The meter was spent once, however often the commit was sent
        assert w is None or meter_count(store, w.meters[0]) == 1

    refusals: list[str | None] = ["stale_object"]
    if verb != "replace":
        refusals.append("memory_full" if verb == "create" else None)
    if bump:
        refusals.append("not_found")
    return lambda: store.commit(change), check, refusals


def _fork(
    store: DynamoStore, documents: int, *, budget: bool = False, split: bool = False, first: bool = False
) -> Scenario:
    """A fork: the budget spent first (UpdateItems), then the child, its entry in the workspace's index, its
    copies, the fork log, the parent's `forked_at` and the child's `fork` version records, in one transaction.

    `split`: the transaction limit is lowered so that the fork does not fit, as a fork of 48 documents or
    more does not: the records go first, in a transaction of their own. `first`: the refusals are that
    first transaction's, else the child's."""
    parent = conversation(store)
    anchor = Anchor("conversation", parent.public_id)
    docs = [create(store, anchor, f"d{i:02d}.md") for i in range(documents)]
    child = Conversation(
        uuid7(), parent.workspace_id, parent.account_id, parent.created_by, now_iso(), parent_public_id=parent.public_id
    )
    child_anchor = Anchor("conversation", child.public_id)
    now = time.time()
    versions = [Version.of(replace(d, anchor=child_anchor), "fork", now, forked_from=parent.public_id) for d in docs]
    w = WriteBudget((Meter("principal", uuid7(), 100),)) if budget else None

    def check() -> None:
        assert store.get(Ref.conversation(child.public_id)) == child
        copies = store.list_documents(child_anchor)
        assert [d.content_key for d in copies] == [d.content_key for d in docs]
        assert meta_count(store, child_anchor) == (documents or None)
        # The child's history starts at the inherited versions, and the parent knows it was forked
        for d in docs:
            got = record(store, child_anchor, d.rest, d.lock_version)
            assert got is not None and (got.operation, got.content_key) == ("fork", d.content_key)
        forked_at = stored(store, Ref.conversation(parent.public_id)).forked_at
        assert forked_at == (int(now) if documents else None)
        # The meter was spent once, however often the fork's transactions were sent
        assert w is None or meter_count(store, w.meters[0]) == 1

    records: list[str | None] = [None] * documents
    # The child, its entry in the workspace's index, then (with documents) the counter, the copies, the
    # fork log and the parent's mark.
    child_items: list[str | None] = [
        "already_exists",
        None,
        *([None] * (documents + 2) + ["not_found"] if documents else []),
    ]
    whole = [*child_items, *records]
    refusals = whole if not split else records if first else child_items

    def write() -> None:
        if not split:
            store.fork_conversation(child, docs, versions, w, now)
            return
        # One item short of the whole fork and its keyed record: the largest limit it does not fit.
        with mock.patch.object(store_documents, "TRANSACTION_ITEMS", len(whole)):
            store.fork_conversation(child, docs, versions, w, now)

    return write, check, refusals


def _rollback(store: DynamoStore, *, bump: bool, budget: bool) -> Scenario:
    """A rollback of v1 to v0: the pointer to v0's object, its record, and the check that v0 still holds it."""
    conv = conversation(store)
    anchor = Anchor("conversation", conv.public_id) if bump else Anchor("workspace", conv.workspace_id)
    v0, v1 = history(store, anchor)
    restored = replace(v0, lock_version=2, written_at=now_iso())
    change = DocumentChange(
        anchor,
        "a.md",
        (v1.public_id, 1),
        restored,
        ConversationBump(conv.public_id) if bump else None,
        WriteBudget((Meter("principal", uuid7(), 100),)) if budget else None,
        version=recorded(restored, "rollback", rolled_back_from=0),
        requires=VersionCheck(anchor, "a.md", v0.public_id, 0),
    )
    revision = stored(store, Ref.conversation(conv.public_id)).context_revision

    def check() -> None:
        assert pointer(store, anchor, "a.md") == restored
        got = record(store, anchor, "a.md", 2)
        assert got is not None and (got.operation, got.rolled_back_from, got.content_key) == (
            "rollback",
            0,
            v0.content_key,
        )
        source = record(store, anchor, "a.md", 0)
        assert source is not None and source.content_key == v0.content_key
        assert stored(store, Ref.conversation(conv.public_id)).context_revision == revision + (1 if bump else 0)

    # A synthetic cancellation carries no old item: a failed source check then reads as a record that is
    # not this document's (the redacted case, with its old item, is test_a_rollback_whose_source_...)
    refusals: list[str | None] = ["stale_object"]
    if bump:
        refusals.append("not_found")
    refusals += [None, "memory_version_not_found"]
    return lambda: store.commit(change), check, refusals


def _retention(store: DynamoStore) -> Scenario:
    """A replace at the retention bound: the new record in, the oldest kept record out, in one commit."""
    conv = conversation(store)
    anchor = Anchor("workspace", conv.workspace_id)
    v0, v1 = history(store, anchor)
    v2 = version(store, anchor, "a.md", "third", v0.public_id, 2)
    change = DocumentChange(anchor, "a.md", (v1.public_id, 1), v2, version=recorded(v2), prune=0)

    def check() -> None:
        assert pointer(store, anchor, "a.md") == v2
        assert record(store, anchor, "a.md", 0) is None
        assert [r is not None for r in (record(store, anchor, "a.md", 1), record(store, anchor, "a.md", 2))] == [
            True,
            True,
        ]

    return lambda: store.commit(change), check, ["stale_object", None, None]


def _redaction(store: DynamoStore, *, budget: bool) -> Scenario:
    """A redaction of v0 while the document holds v1: the pair checked, the record scrubbed, the budget spent."""
    conv = conversation(store)
    anchor = Anchor("conversation", conv.public_id)
    v0, v1 = history(store, anchor)
    target = record(store, anchor, "a.md", 0)
    assert target is not None
    w = WriteBudget((Meter("principal", uuid7(), 100),)) if budget else None
    at = now_iso()

    def check() -> None:
        got = record(store, anchor, "a.md", 0)
        assert got is not None and (got.content_key, got.redacted_at, got.sha256) == (None, at, v0.sha256)
        assert got.redacted_by == AUTHOR
        assert pointer(store, anchor, "a.md") == v1

    refusals: list[str | None] = ["stale_object", "memory_version_not_found"]
    return lambda: store.redact_version(target, (v1.public_id, 1), AUTHOR, at, w), check, refusals


def _account(store: DynamoStore) -> Scenario:
    account = Account(uuid7(), "acme", now_iso())
    human = Human(uuid7(), account.public_id, "ada", now_iso())
    token = TokenRow(uuid7().replace("-", ""), "human", human.public_id, account.public_id)

    def check() -> None:
        assert store.get(Ref.human(human.public_id)) == human

    return lambda: store.create_account(account, human, token), check, ["already_exists"] * 3


def _human(store: DynamoStore) -> Scenario:
    account = uuid7()
    human = Human(uuid7(), account, "bob", now_iso())
    token = TokenRow(uuid7().replace("-", ""), "human", human.public_id, account)

    def check() -> None:
        assert store.get(Ref.human(human.public_id)) == human

    return lambda: store.create_human(human, token), check, ["already_exists"] * 2


def _workspace(store: DynamoStore) -> Scenario:
    ws = Workspace(uuid7(), uuid7(), "room", now_iso())
    member = Member(ws.public_id, "human", uuid7(), "member", now_iso())

    def check() -> None:
        assert store.get(Ref.workspace(ws.public_id)) == ws

    return lambda: store.create_workspace(ws, member), check, ["already_exists"] * 2


def _agent(store: DynamoStore, kind: str) -> Scenario:
    agent = Agent(uuid7(), uuid7(), uuid7(), "helper", kind, None, now_iso())  # type: ignore[arg-type]
    token = TokenRow(uuid7().replace("-", ""), "agent", agent.public_id, agent.account_id)

    def check() -> None:
        assert stored(store, Ref.agent(agent.public_id)).public_id == agent.public_id

    n = 4 if kind == "definition" else 3
    return lambda: store.create_agent(agent, token), check, ["already_exists"] * n


def _rotation(store: DynamoStore, first: bool) -> Scenario:
    agent = Agent(uuid7(), uuid7(), uuid7(), "helper", "program", None, now_iso())
    old = None
    if not first:
        old = TokenRow(uuid7().replace("-", ""), "agent", agent.public_id, agent.account_id)
        agent.token_digest = old.digest
    store.create_agent(agent, old)
    new = TokenRow(uuid7().replace("-", ""), "agent", agent.public_id, agent.account_id)

    def check() -> None:
        assert stored(store, Ref.agent(agent.public_id)).token_digest == new.digest

    refusals: list[str | None] = ["stale_object", "stale_object"] + ([] if first else [None])
    return lambda: store.rotate_agent_token(agent, None if first else old.digest, new), check, refusals  # type: ignore[union-attr]


def _mounting(n: int) -> Execution:
    """A new execution mounting `n` Memories, the first of them at two paths (indexed once)."""
    ids = [f"mem_{uuid7().replace('-', '')}" for _ in range(n)]
    mounts = [Mount(f"/workspace/m{i}", "memory", "readonly", memory_id=m, name=f"m{i}") for i, m in enumerate(ids)]
    mounts.append(Mount("/memory/m0", "memory", "readwrite", memory_id=ids[0], name="m0", read_first=True))
    mounts.append(Mount("/memory/agent", "agent", "readwrite"))
    account = uuid7()
    human = uuid7()
    return Execution(
        uuid7(),
        uuid7(),
        uuid7(),
        account,
        None,
        "human",
        human,
        None,
        [],
        [],
        now_iso(),
        expires_at=2_000_000_000,
        mounts=mounts,
    )


def mount_entries(store: DynamoStore, ex: Execution) -> dict[str, int]:
    """The account's session-mount index: sort key -> expires_at."""
    resp = store.ddb.query(
        TableName=store.table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :p)",
        ExpressionAttributeValues={":pk": {"S": f"ACCOUNT#{ex.account_id}"}, ":p": {"S": "MEMMOUNT#"}},
    )
    return {it["sk"]["S"]: int(it["expires_at"]["N"]) for it in resp["Items"]}


def _execution(store: DynamoStore) -> Scenario:
    """An execution mounting two Memories (one at two paths): the row and one index entry per Memory."""
    ex = _mounting(2)

    def check() -> None:
        assert store.get(Ref.execution(ex.public_id)) == ex
        ids = dict.fromkeys(m.memory_id for m in ex.mounts if m.memory_id)
        assert mount_entries(store, ex) == {f"MEMMOUNT#{m}#{ex.public_id}": ex.expires_at for m in ids}
        assert store.mounted_memories(ex.account_id, ex.expires_at - 1) == set(ids)
        assert store.mounted_memories(ex.account_id, ex.expires_at) == set()

    return lambda: store.create_execution(ex), check, ["already_exists", None, None]


SCENARIOS: dict[str, Callable[[DynamoStore], Scenario]] = {
    "create": lambda s: _commit(s, verb="create", bump=False, budget=False),
    "create+bump": lambda s: _commit(s, verb="create", bump=True, budget=False),
    "create+bump+budget": lambda s: _commit(s, verb="create", bump=True, budget=True),
    "replace+bump": lambda s: _commit(s, verb="replace", bump=True, budget=False),
    "replace+bump+budget": lambda s: _commit(s, verb="replace", bump=True, budget=True),
    "delete": lambda s: _commit(s, verb="delete", bump=False, budget=False),
    "delete+bump+budget": lambda s: _commit(s, verb="delete", bump=True, budget=True),
    "fork": lambda s: _fork(s, 2),
    "fork+budget": lambda s: _fork(s, 2, budget=True),
    "fork-empty": lambda s: _fork(s, 0),
    "fork-split+budget": lambda s: _fork(s, 2, budget=True, split=True),
    "fork-split-versions+budget": lambda s: _fork(s, 2, budget=True, split=True, first=True),
    "replace+version+prune": _retention,
    "rollback": lambda s: _rollback(s, bump=False, budget=False),
    "rollback+bump+budget": lambda s: _rollback(s, bump=True, budget=True),
    "redaction": lambda s: _redaction(s, budget=False),
    "redaction+budget": lambda s: _redaction(s, budget=True),
    "account": _account,
    "human": _human,
    "workspace": _workspace,
    "agent-program": lambda s: _agent(s, "program"),
    "agent-definition": lambda s: _agent(s, "definition"),
    "rotation-first": lambda s: _rotation(s, True),
    "rotation": lambda s: _rotation(s, False),
    "execution+mounts": _execution,
}
# How many items each scenario's transaction has: the positions every test below walks.
ITEMS = {
    "create": 2,
    "create+bump": 3,
    "create+bump+budget": 3,
    "replace+bump": 2,
    "replace+bump+budget": 2,
    "delete": 2,
    "delete+bump+budget": 3,
    "fork": 9,
    "fork+budget": 9,
    "fork-empty": 2,
    "fork-split+budget": 7,
    "fork-split-versions+budget": 2,
    "replace+version+prune": 3,
    "rollback": 3,
    "rollback+bump+budget": 4,
    "redaction": 2,
    "redaction+budget": 2,
    "account": 3,
    "human": 2,
    "workspace": 2,
    "agent-program": 3,
    "agent-definition": 4,
    "rotation-first": 2,
    "rotation": 3,
    "execution+mounts": 3,
}
POSITIONS = [(name, i) for name, n in ITEMS.items() for i in range(n)]
# (transactions sent before, after) the one whose items ITEMS counts, for scenarios that send more than one
AROUND = {"fork-split+budget": (1, 0), "fork-split-versions+budget": (0, 1)}


def _one(code: str, position: int) -> Callable[[int], tuple[AWSResponse, dict[str, Any]]]:
    def answer(n: int) -> tuple[AWSResponse, dict[str, Any]]:
        assert position < n, f"the transaction has {n} items, not {position + 1}"
        return cancellation(["None"] * position + [code] + ["None"] * (n - position - 1))

    return answer


@pytest.mark.parametrize("code", CONTENTION)
@pytest.mark.parametrize(("scenario", "position"), POSITIONS)
def test_contention_on_any_item_is_retried_and_the_write_lands_once(
    store: DynamoStore, stage: Callable[[str], Stage], paced: list[float], scenario: str, position: int, code: str
) -> None:
    # Given a write transaction whose item `position` is contended for its first two sends
    write, check, _ = SCENARIOS[scenario](store)
    before, after = AROUND.get(scenario, (0, 0))
    tx = stage("TransactWriteItems")
    tx.arm(_one(code, position), times=2, skip=before)
    # When it is sent, then it is retried until it commits: 3 sends, 2 backoff waits, and it landed once
    write()
    assert len(tx.sent) == before + 3 + after
    assert [s.items for s in tx.sent[before : before + 3]] == [ITEMS[scenario]] * 3
    assert len(paced) == 2
    check()


@pytest.mark.parametrize(("scenario", "position"), POSITIONS)
def test_contention_that_never_clears_is_storage_busy_after_three_retries(
    store: DynamoStore, stage: Callable[[str], Stage], paced: list[float], scenario: str, position: int
) -> None:
    # Given a write transaction whose item `position` stays contended (each position gets one of the codes)
    write, _, _ = SCENARIOS[scenario](store)
    before, _ = AROUND.get(scenario, (0, 0))
    code = CONTENTION[(position + len(scenario)) % len(CONTENTION)]
    tx = stage("TransactWriteItems")
    tx.arm(_one(code, position), times=1000, skip=before)
    # When it is sent, then after 1 send and 3 retries it is 503 storage_busy, asking for a wait
    with pytest.raises(ApiError) as info:
        write()
    assert (info.value.code, info.value.status) == ("storage_busy", 503)
    assert info.value.details["retry_after_seconds"] == 1
    assert len(tx.sent) == before + 4
    # And the waits are full-jitter exponential (shown at the largest jitter): 50, 100, 200 ms
    assert paced == [0.05, 0.1, 0.2]


@pytest.mark.parametrize(("scenario", "position"), POSITIONS)
def test_a_failed_condition_on_an_item_is_that_items_refusal_and_is_not_retried(
    store: DynamoStore, stage: Callable[[str], Stage], paced: list[float], scenario: str, position: int
) -> None:
    write, _, refusals = SCENARIOS[scenario](store)
    expected = refusals[position]
    if expected is None:
        pytest.skip("this item carries no condition, so DynamoDB cannot fail it")
    # Given item `position` failed its condition while another item was contended
    other = "TransactionConflict"

    def answer(n: int) -> tuple[AWSResponse, dict[str, Any]]:
        codes = ["None"] * n
        codes[position] = "ConditionalCheckFailed"
        codes[(position + 1) % n] = other if n > 1 else "ConditionalCheckFailed"
        return cancellation(codes)

    before, _ = AROUND.get(scenario, (0, 0))
    tx = stage("TransactWriteItems")
    tx.arm(answer, times=1000, skip=before)
    # Then the refusal is that item's, sent once: a refusal is an answer, not contention
    with pytest.raises(ApiError) as info:
        write()
    assert info.value.code == expected
    assert len(tx.sent) == before + 1 and paced == []


def test_every_transaction_carries_a_request_token_stable_across_retries_and_new_per_request(
    store: DynamoStore, stage: Callable[[str], Stage], paced: list[float]
) -> None:
    tokens: dict[str, set[str | None]] = {}
    tx = stage("TransactWriteItems")
    for name, make in SCENARIOS.items():
        write, _, _ = make(store)
        before, after = AROUND.get(name, (0, 0))
        tx.arm(_one("TransactionConflict", 0), times=2, skip=before)
        write()
        assert len(tx.sent) == before + 3 + after
        (token,) = {s.token for s in tx.sent[before : before + 3]}  # the same token on every send of one write
        assert token is not None and 0 < len(token) <= 36
        tokens[name] = {s.token for s in tx.sent}
        # A scenario's other transactions are writes of their own, each with its own token
        assert len(tokens[name]) == before + 1 + after
    # And no two writes share one
    assert len(set().union(*tokens.values())) == sum(len(t) for t in tokens.values())


@pytest.mark.parametrize("budget", [False, True])
@pytest.mark.parametrize(("documents", "transactions"), [(8, [21]), (47, [99]), (48, [48, 53])])
def test_a_fork_is_one_transaction_while_it_fits_with_room_for_a_keyed_record_and_two_past_that(
    store: DynamoStore, documents: int, transactions: list[int], budget: bool
) -> None:
    # Given a fork of `documents` documents: two items each (the copy, its record) and five more
    write, check, _ = _fork(store, documents, budget=budget)
    writes: list[tuple[str, list[str]]] = []  # (operation, the partition key of each item it writes)

    def log(params: dict[str, Any], model: Any, **_: Any) -> None:
        body = json.loads(params["body"])
        if model.name == "TransactWriteItems":
            items = [next(iter(i.values())) for i in body["TransactItems"]]
            writes.append((model.name, [(i.get("Item") or i["Key"])["pk"]["S"] for i in items]))
        elif model.name == "UpdateItem":
            writes.append((model.name, [body["Key"]["pk"]["S"]]))

    store.ddb.meta.events.register("before-call.dynamodb", log, unique_id="fork-writes")
    try:
        write()
    finally:
        store.ddb.meta.events.unregister("before-call.dynamodb", unique_id="fork-writes")
    check()
    # Then a budget is spent first, one UpdateItem on its meter's row
    rate = keys.rate("principal", "", 0)[0]
    meters = [(op, pks) for op, pks in writes if any(pk.startswith(rate) for pk in pks)]
    assert [op for op, _ in meters] == ["UpdateItem"] * (1 if budget else 0)
    assert writes[: len(meters)] == meters
    # And the fork is one transaction up to 99 items (one kept for a keyed request's record), else the
    # records first and the child's in a transaction of its own, no meter in either; it landed whole
    assert [(op, len(pks)) for op, pks in writes[len(meters) :]] == [("TransactWriteItems", n) for n in transactions]


def _prepared_rollback(store: DynamoStore) -> tuple[Conversation, Anchor, Document, Document, DocumentChange]:
    conv = conversation(store)
    anchor = Anchor("conversation", conv.public_id)
    v0, v1 = history(store, anchor)
    restored = replace(v0, lock_version=2, written_at=now_iso())
    change = DocumentChange(
        anchor,
        "a.md",
        (v1.public_id, 1),
        restored,
        ConversationBump(conv.public_id),
        version=recorded(restored, "rollback", rolled_back_from=0),
        requires=VersionCheck(anchor, "a.md", v0.public_id, 0),
    )
    return conv, anchor, v0, v1, change


def test_a_rollback_whose_source_was_redacted_before_it_committed_is_refused_and_changes_nothing(
    store: DynamoStore,
) -> None:
    # Given a rollback of v1 to v0, prepared, and a redaction of v0 that commits first (same pair)
    conv, anchor, _, v1, change = _prepared_rollback(store)
    source = record(store, anchor, "a.md", 0)
    assert source is not None
    store.redact_version(source, (v1.public_id, 1), AUTHOR, now_iso(), None)
    # When the rollback commits, then its source check refuses it as the redaction it is (DynamoDB's old
    # item tells a redacted record from a missing one), and nothing moved
    with pytest.raises(ApiError) as info:
        store.commit(change)
    assert info.value.code == "memory_version_redacted"
    assert pointer(store, anchor, "a.md") == v1
    assert record(store, anchor, "a.md", 2) is None
    assert stored(store, Ref.conversation(conv.public_id)).context_revision == 0


def test_a_redaction_after_a_rollback_of_its_pair_is_stale_and_keeps_the_record(store: DynamoStore) -> None:
    # Given a rollback of v1 to v0 that commits first, and a redaction of v0 holding the same pair
    _, anchor, v0, v1, change = _prepared_rollback(store)
    source = record(store, anchor, "a.md", 0)
    assert source is not None
    store.commit(change)
    # Then the redaction is stale and v0 keeps its bytes, which the current version now points at too
    with pytest.raises(ApiError) as info:
        store.redact_version(source, (v1.public_id, 1), AUTHOR, now_iso(), None)
    assert info.value.code == "stale_object"
    kept = record(store, anchor, "a.md", 0)
    assert kept is not None and kept.content_key == v0.content_key and kept.redacted_at is None
    current = pointer(store, anchor, "a.md")
    assert current is not None and current.content_key == v0.content_key


def test_a_commit_whose_answer_was_lost_is_answered_as_the_commit(store: DynamoStore) -> None:
    # Given a create whose first send lands in moto, after which the answer is lost (a read timeout), so
    # botocore sends it again; moto, unlike DynamoDB, ignores ClientRequestToken and cancels the resend
    conv = conversation(store)
    anchor = Anchor("conversation", conv.public_id)
    change = DocumentChange(anchor, "a.md", None, version(store, anchor, "a.md", "x"), ConversationBump(conv.public_id))
    sends: list[bytes] = []

    def lose_first_answer(request: Any, **_: Any) -> None:
        sends.append(request.body)
        if len(sends) == 1:
            raise ReadTimeoutError(endpoint_url=request.url)

    # moto's own before-send handler runs first (it was registered when the client was built), so this
    # one runs after the commit applied
    store.ddb.meta.events.register("before-send.dynamodb.TransactWriteItems", lose_first_answer, unique_id="lose")
    try:
        store.commit(change)
    finally:
        store.ddb.meta.events.unregister("before-send.dynamodb.TransactWriteItems", unique_id="lose")
    # Then the resend carried the same token, and its refusal (the item it put is already there, exactly)
    # was read as the commit itself: success, applied once
    assert len(sends) == 2
    tokens = {json.loads(b)["ClientRequestToken"] for b in sends}
    assert len(tokens) == 1
    assert pointer(store, anchor, "a.md") == change.new
    assert meta_count(store, anchor) == 1
    assert stored(store, Ref.conversation(conv.public_id)).context_revision == 1


# ---- single-item writes and reads --------------------------------------------------------------------


def _single(store: DynamoStore, operation: str) -> tuple[Callable[[], Any], Callable[[], None]]:
    conv = conversation(store)
    if operation == "PutItem":
        anchor = Anchor("workspace", conv.workspace_id)
        existing = create(store, anchor, "a.md")
        new = version(store, anchor, "a.md", "v1", existing.public_id, 1)
        change = DocumentChange(anchor, "a.md", (existing.public_id, 0), new)

        def put_check() -> None:
            assert pointer(store, anchor, "a.md") == new

        return lambda: store.commit(change), put_check

    def update_check() -> None:
        assert stored(store, Ref.conversation(conv.public_id)).archived is True

    return lambda: store.update_conversation(conv.public_id, archive=True, bump=False), update_check


@pytest.mark.parametrize("code", SINGLE_CONTENTION)
@pytest.mark.parametrize("operation", ["PutItem", "UpdateItem"])
def test_a_contended_single_item_write_is_retried_then_busy(
    store: DynamoStore, stage: Callable[[str], Stage], paced: list[float], operation: str, code: str
) -> None:
    write, check = _single(store, operation)
    op = stage(operation)
    # Contended twice, then through: 3 sends and it landed
    op.arm(lambda _: _error(code, "busy"), times=2)
    write()
    assert len(op.sent) == 3
    check()
    # Contended for good: 4 sends, then storage_busy
    write, _ = _single(store, operation)
    op.arm(lambda _: _error(code, "busy"), times=1000)
    with pytest.raises(ApiError) as info:
        write()
    assert info.value.code == "storage_busy" and len(op.sent) == 4


@pytest.mark.parametrize(
    "code", ["ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"]
)
@pytest.mark.parametrize("operation", ["GetItem", "BatchGetItem", "Query"])
def test_a_read_throttled_past_botocores_retries_is_storage_busy_not_a_500(
    store: DynamoStore, stage: Callable[[str], Stage], paced: list[float], operation: str, code: str
) -> None:
    conv = conversation(store)
    reads: dict[str, Callable[[], Any]] = {
        "GetItem": lambda: store.get(Ref.conversation(conv.public_id)),
        "BatchGetItem": lambda: store.get_many([Ref.conversation(conv.public_id), Ref.workspace(conv.workspace_id)]),
        "Query": lambda: store.list_documents(Anchor("conversation", conv.public_id)),
    }
    stage(operation).arm(lambda _: _error(code, "slow down"), times=1000)
    with pytest.raises(ApiError) as info:
        reads[operation]()
    assert (info.value.code, info.value.status) == ("storage_busy", 503)


def test_unprocessed_keys_are_asked_again_with_backoff_then_busy(
    store: DynamoStore, stage: Callable[[str], Stage], paced: list[float]
) -> None:
    # Given BatchGetItem answers every key as unprocessed (no error: DynamoDB had no capacity for them)
    conv = conversation(store)
    refs = [Ref.conversation(conv.public_id), Ref.workspace(conv.workspace_id)]
    batch = stage("BatchGetItem")

    def unprocessed(_: int) -> tuple[AWSResponse, dict[str, Any]]:
        keys = [{"pk": {"S": f"CONV#{conv.public_id}"}, "sk": {"S": "CONV"}}]
        parsed = {"Responses": {}, "UnprocessedKeys": {store.table: {"Keys": keys}}}
        return AWSResponse("https://dynamodb.us-east-1.amazonaws.com/", 200, HTTPHeaders(), None), parsed

    # Twice, then answered: the rows come back after two waits
    batch.arm(unprocessed, times=2)
    assert store.get_many(refs)[refs[0]] == conv
    assert len(batch.sent) == 3 and len(paced) == 2
    # For good: a bounded 4 asks, then storage_busy rather than a loop without end
    batch.arm(unprocessed, times=1000)
    with pytest.raises(ApiError) as info:
        store.get_many(refs)
    assert info.value.code == "storage_busy" and len(batch.sent) == 4


def test_an_execution_without_memory_mounts_is_one_conditional_put(
    store: DynamoStore, stage: Callable[[str], Stage]
) -> None:
    ex = replace(_mounting(1), mounts=[Mount("/memory/agent", "agent", "readwrite")])
    tx, put = stage("TransactWriteItems"), stage("PutItem")
    store.create_execution(ex)
    assert (len(tx.sent), len(put.sent)) == (0, 1)
    assert store.get(Ref.execution(ex.public_id)) == ex and mount_entries(store, ex) == {}


def test_more_mounted_memories_than_a_transaction_holds_are_indexed_ahead_of_the_execution(
    store: DynamoStore, stage: Callable[[str], Stage]
) -> None:
    # Given an execution mounting 100 Memories (a tenant's many defaults): 100 index entries and its row
    ex = _mounting(100)
    tx = stage("TransactWriteItems")
    store.create_execution(ex)
    # Then the entries past the execution's transaction went first, and every one is there
    assert [s.items for s in tx.sent] == [2, 1 + 98]
    assert len(mount_entries(store, ex)) == 100
    assert store.get(Ref.execution(ex.public_id)) == ex
