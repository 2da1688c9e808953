"""Typed records, append (issue 15): real thread races, injected AWS faults and the bounded cost of an append.

Threads race over HTTP through the local gateway into serialised moto (as tests/http/test_races.py), so a
lost increment or a second record is the service's own race. Faults are botocore event hooks on the
service's own clients answering with AWS's exact error shapes (as tests/http/test_faults.py).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

import pytest
import requests
from agent_memory.domain.records import text as recordtext
from agent_memory.store.commit import PACING
from botocore.awsrequest import AWSResponse

from ..aws_errors import transaction_cancelled
from .records import Room, record_rows
from .records import room as room  # the fixture
from .test_idempotency import REPLAYED, hooked
from .test_races import client, race
from .world import aws_calls

TEXT = "Invoice numbers are generated with a year prefix sequentially per tenant"


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Contention retries do not sleep: these tests are about outcomes, not pacing."""
    monkeypatch.setattr(PACING, "sleep", lambda _: None)


def append_as(room: Room, who: Any, headers: dict[str, str] | None = None, **fields: Any) -> requests.Response:
    return client(room.api).post(room.url, who, {"record": fields}, headers=headers)


# ---- races ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("round_", range(2))
def test_16_concurrent_identical_appends_make_one_record_mentioned_16_times(room: Room, round_: int) -> None:
    answers = race(16, lambda _: append_as(room, room.ada, content=TEXT, type="decision"))
    assert Counter(r.status_code for r in answers) == {201: 1, 200: 15}, [r.text for r in answers]
    ids = {r.json()["record"]["public_id"] for r in answers}
    assert len(ids) == 1
    (rid,) = ids
    assert all(r.json()["merged"] is (r.status_code == 200) for r in answers)
    shown = room.record(rid)
    assert (shown["mention_count"], shown["evidence_count"]) == (16, 1)
    assert [r["public_id"] for r in room.search("invoice")] == [rid]
    assert len(record_rows()) == 1


def test_concurrent_same_length_near_duplicates_lose_no_evidence(room: Room) -> None:
    base = room.added(content=TEXT, type="decision")["record"]
    # Each variant changes the last word (one shingle): near, but no longer, so no text is replaced
    variants = [TEXT.rsplit(" ", 1)[0] + f" tenant{i}" for i in range(12)]
    assert all(recordtext.jaccard(recordtext.shingles(TEXT), recordtext.shingles(v)) >= 0.7 for v in variants)
    answers = race(len(variants), lambda i: append_as(room, room.ada, content=variants[i], type="decision"))
    assert {r.status_code for r in answers} == {200}, [r.text for r in answers]
    assert {r.json()["record"]["public_id"] for r in answers} == {base["public_id"]}
    shown = room.record(base["public_id"])
    assert (shown["evidence_count"], shown["mention_count"]) == (1 + len(variants), 1)
    assert shown["content"] == TEXT


def test_concurrent_longer_near_duplicates_all_land_and_lose_no_evidence(room: Room, quiet: None) -> None:
    base = room.added(content=TEXT, type="decision")["record"]
    # Each variant adds a word: each would replace the stored text, a change conditional on its version
    variants = [f"{TEXT} v{i}" for i in range(8)]
    answers = race(len(variants), lambda i: append_as(room, room.ada, content=variants[i], type="decision"))
    # An append names no version, so none of them may be told the record is stale: all merge into it
    assert {r.status_code for r in answers} == {200}, [r.text for r in answers]
    assert {r.json()["record"]["public_id"] for r in answers} == {base["public_id"]}
    (row,) = record_rows()
    assert int(row["evidence_count"]) - 1 + int(row["mention_count"]) - 1 == len(variants)
    shown = room.record(base["public_id"])
    assert shown["evidence_count"] == 1 + len(variants)
    # Exactly one of them replaced the text (after it, the others were no longer longer)
    assert sum(r.json()["content_replaced"] for r in answers) == 1
    assert shown["content"] in variants


def test_concurrent_keyed_identical_appends_change_things_once(room: Room) -> None:
    room.added(content=TEXT, type="decision")
    key = {"Idempotency-Key": "crowd-1"}
    answers = race(8, lambda _: append_as(room, room.ada, key, content=TEXT, type="decision"))
    assert {r.status_code for r in answers} == {200}, [r.text for r in answers]
    assert len({json.dumps(r.json(), sort_keys=True) for r in answers}) == 1
    assert sum(r.headers.get(REPLAYED) is None for r in answers) == 1
    (rec,) = record_rows()
    assert int(rec["mention_count"]) == 2


def test_concurrent_keyed_first_appends_make_one_record(room: Room) -> None:
    key = {"Idempotency-Key": "crowd-2"}
    answers = race(8, lambda _: append_as(room, room.ada, key, content=TEXT, type="decision"))
    assert {r.status_code for r in answers} == {201}, [r.text for r in answers]
    assert sum(r.headers.get(REPLAYED) is None for r in answers) == 1
    (rec,) = record_rows()
    assert int(rec["mention_count"]) == 1


# ---- faults -------------------------------------------------------------------------------------------------


def cancelled(reasons: list[dict[str, Any]]) -> tuple[AWSResponse, dict[str, Any]]:
    """A TransactWriteItems answer DynamoDB gives when a transaction is cancelled."""
    return transaction_cancelled(reasons)


def sent_items(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The TransactItems of a serialised TransactWriteItems request (what a before-call hook is given)."""
    items: list[dict[str, Any]] = json.loads(request["body"])["TransactItems"]
    return items


class ConflictOnce:
    """The first TransactWriteItems is cancelled with TransactionConflict on its first item (the record)."""

    def __init__(self) -> None:
        self.sent = 0
        self.lock = threading.Lock()

    def before(self, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        with self.lock:
            self.sent += 1
            first = self.sent == 1
        if not first:
            return None
        n = len(sent_items(params))
        reasons = [{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}]
        return cancelled(reasons + [{"Code": "None"}] * (n - 1))


def test_a_transaction_conflict_on_the_create_is_retried_and_lands_once(room: Room, quiet: None) -> None:
    inj = ConflictOnce()
    with hooked("before-call.dynamodb.TransactWriteItems", inj.before, "test-rec-conflict"):
        r = room.append(content=TEXT, type="decision")
    assert r.status_code == 201, r.text
    assert inj.sent == 2
    (row,) = record_rows()
    assert row["sk"] == r.json()["record"]["public_id"]
    # The claim it committed holds: the same text is a mention of it
    assert room.added(content=TEXT, type="decision", status=200)["record"]["public_id"] == row["sk"]


def test_a_conflict_that_never_clears_is_storage_busy_and_leaves_nothing(room: Room, quiet: None) -> None:
    def always(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        n = len(sent_items(params))
        return cancelled([{"Code": "TransactionConflict", "Message": "Transaction is ongoing"}] * n)

    with hooked("before-call.dynamodb.TransactWriteItems", always, "test-rec-conflict-always"):
        r = room.append(content=TEXT, type="decision")
    assert r.status_code == 503 and r.json()["error"]["code"] == "storage_busy", r.text
    assert "Retry-After" in r.headers
    assert record_rows() == []
    assert room.added(content=TEXT, type="decision")["merged"] is False


def test_a_claim_held_by_a_record_the_read_missed_makes_the_append_its_mention(room: Room) -> None:
    # Given a record holding the text's claim
    holder = room.added(content=TEXT, type="decision")["record"]

    # When an identical append's first read misses it (as if read a moment before the holder committed)
    def forget(parsed: dict[str, Any], **_: Any) -> None:
        for table, items in (parsed.get("Responses") or {}).items():
            parsed["Responses"][table] = [
                it for it in items if not it["pk"]["S"].startswith(("RECDUP#", "RECBAND#", "RECORD#"))
            ]

    sent: list[int] = []

    def count(**_: Any) -> None:
        sent.append(1)

    with (
        hooked("after-call.dynamodb.BatchGetItem", forget, "test-rec-forget"),
        hooked("before-call.dynamodb.TransactWriteItems", count, "test-rec-count"),
    ):
        r = room.append(content=TEXT, type="decision")

    # Then its create is refused by the claim's condition, and the append counts a mention of the holder
    assert r.status_code == 200, r.text
    assert len(sent) == 1
    out = r.json()
    assert (out["merged"], out["record"]["public_id"]) == (True, holder["public_id"])
    assert room.record(holder["public_id"])["mention_count"] == 2
    assert len(record_rows()) == 1


def test_a_stubbed_conditional_check_failure_on_the_claim_names_the_holder(room: Room) -> None:
    holder = room.added(content=TEXT, type="decision")["record"]
    claim = next(
        it for it in _raw_items() if it["pk"]["S"].startswith("RECDUP#") and it["record_id"]["S"] == holder["public_id"]
    )
    other = "Refunds are approved by the finance lead within two working days"

    def refuse(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        items = sent_items(params)
        roles = ["Put" in it and it["Put"]["Item"]["pk"]["S"].startswith("RECDUP#") for it in items]
        if not any(roles):
            return None
        reasons = [
            {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed", "Item": claim}
            if is_claim
            else {"Code": "None"}
            for is_claim in roles
        ]
        return cancelled(reasons)

    with hooked("before-call.dynamodb.TransactWriteItems", refuse, "test-rec-refuse"):
        r = room.append(content=other, type="decision")
    assert r.status_code == 200, r.text
    assert r.json()["record"]["public_id"] == holder["public_id"]
    assert room.record(holder["public_id"])["mention_count"] == 2
    assert len(record_rows()) == 1


def _raw_items() -> list[dict[str, Any]]:
    from agent_memory.core.settings import settings
    from agent_memory.store import aws_clients

    ddb, _ = aws_clients()
    out: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": settings().table_name, "ConsistentRead": True}
    while True:
        page = ddb.scan(**kwargs)
        out += page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return out
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


# ---- bounded work -------------------------------------------------------------------------------------------

PREFIX = (
    "The quarterly billing export for every enterprise tenant runs on the first business day and writes one"
    " file per region into the shared reports bucket with"
)
WORDS = [
    "alder", "birch", "cedar", "dogwood", "elm", "fir", "ginkgo", "hazel", "ivy", "juniper", "kapok", "larch",
    "maple", "nutmeg", "oak", "pine", "quince", "rowan", "spruce", "teak", "upas", "viburnum", "willow", "yew",
]  # fmt: skip


def variant(i: int) -> str:
    """A text sharing a long prefix with every other variant (so their MinHash bands mostly collide) but
    with eight words of its own: Jaccard about 0.5, below the merge threshold."""
    own = [f"{WORDS[(i + k) % len(WORDS)]}{i}x{k}" for k in range(8)]
    return f"{PREFIX} {' '.join(own)}"


def cost(room: Room, text: str, status: int = 201, headers: dict[str, str] | None = None) -> Counter[str]:
    with aws_calls() as seen:
        r = room.append(headers=headers, content=text, type="fact")
    assert r.status_code == status, r.text
    return Counter(seen)


def fill(room: Room, start: int, stop: int) -> None:
    answers = race(stop - start, lambda i: append_as(room, room.ada, content=variant(start + i), type="fact"))
    assert {r.status_code for r in answers} == {201}, [r.text for r in answers if r.status_code != 201][:3]


def test_the_variants_are_distinct_but_share_bands() -> None:
    bands = [set(recordtext.band_keys(recordtext.shingles(variant(i)))) for i in range(50)]
    assert recordtext.jaccard(recordtext.shingles(variant(1)), recordtext.shingles(variant(2))) < 0.7
    assert sum(bool(bands[0] & b) for b in bands[1:]) >= 25


def test_an_append_costs_the_same_requests_with_5_or_300_records_in_its_group(room: Room) -> None:
    fill(room, 0, 5)
    cost(room, variant(1000))  # warm: the caller's rows are cached alike for every measured append
    small = {
        "create": cost(room, variant(1001)),
        "mention": cost(room, variant(1001), 200),
        "evidence": cost(room, variant(2) + " again", 200),
        "keyed": cost(room, variant(1002), headers={"Idempotency-Key": "bounded-1"}),
    }
    fill(room, 5, 300)
    large = {
        "create": cost(room, variant(2001)),
        "mention": cost(room, variant(2001), 200),
        "evidence": cost(room, variant(200) + " again", 200),
        "keyed": cost(room, variant(2002), headers={"Idempotency-Key": "bounded-2"}),
    }
    assert small == large, (small, large)
    for what, calls in large.items():
        reads = 3 if what == "keyed" else 2  # the key's record is one more batch read
        assert calls["dynamodb:BatchGetItem"] <= reads and calls["dynamodb:TransactWriteItems"] <= 1, (what, calls)
        assert not {op for op in calls if op.endswith((":Query", ":Scan"))}, (what, calls)
    # A keyed append adds only the key's read to an unkeyed one
    assert large["keyed"] - large["create"] == Counter({"dynamodb:BatchGetItem": 1}), large
    assert len(record_rows()) == 300 + 5
