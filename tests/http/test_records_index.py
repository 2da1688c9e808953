"""Record search through its term index (issue 27): an append's postings ride in its commit, a search reads
the postings of its query's words instead of every record, edits and merges move them, deletes and
rejections take them away (nothing of a removed text survives in them), a workspace from before the index
is searched by reading everything until `agent-memory reindex-records` backfills it, and a hostile query
costs a bounded number of reads."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from agent_memory.domain.records import text as recordtext
from agent_memory.domain.records.service import MAX_SEARCH_CANDIDATES, PENDING, index_terms
from agent_memory.store import get_store, keys, kinds
from agent_memory_sdk.local import cli

from ..support import Api, code
from .record_world import RecordRoom, make_room
from .safe_content import INJECTION
from .world import scan_table

pytestmark = pytest.mark.http

TERM = kinds.RECORD_TERM.shape.pk_prefix


@pytest.fixture
def room(api: Api) -> RecordRoom:
    return make_room(api)


def postings(record_id: str | None = None) -> list[tuple[str, str]]:
    """Every posting in the table (the whole table scanned), or only those naming `record_id`."""
    rows = [(str(i["pk"]), str(i["sk"])) for i in scan_table() if str(i["pk"]).startswith(TERM)]
    return [r for r in rows if record_id is None or r[1].partition("#")[2] == record_id]


def held(record_id: str) -> list[str]:
    """The partitions (one per term) holding a posting of the record, sorted."""
    return sorted(pk for pk, _ in postings(record_id))


def posting_of(ws: str, word: str, layer: str = "Workspace") -> str:
    return keys.record_term_partition(ws, layer, word)


def unique_word() -> str:
    return f"zq{uuid.uuid4().hex[:12]}"


def drop_postings(record_id: str | None = None) -> None:
    """Remove postings straight from the table (as if their records were written before the index)."""
    ddb = get_store().ddb
    for pk, sk in postings(record_id):
        ddb.delete_item(TableName=get_store().table, Key=keys.wire((pk, sk)))


def unmark(ws: str) -> None:
    """Make the workspace one from before the index: no records_index on its row."""
    get_store().ddb.update_item(
        TableName=get_store().table, Key=keys.wire(keys.workspace(ws)), UpdateExpression="REMOVE records_index"
    )


@contextmanager
def dynamodb_requests() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """Every DynamoDB request the service sends while the block runs: (operation, its parameters)."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def note(event_name: str, params: dict[str, Any], **_: Any) -> None:
        seen.append((event_name.rsplit(".", 1)[1], params))

    ddb = get_store().ddb
    ddb.meta.events.register("provide-client-params.dynamodb", note, unique_id="test-records-index")
    try:
        yield seen
    finally:
        ddb.meta.events.unregister("provide-client-params.dynamodb", unique_id="test-records-index")


def keys_read(seen: list[tuple[str, dict[str, Any]]]) -> int:
    return sum(len(req["Keys"]) for op, p in seen if op == "BatchGetItem" for req in p["RequestItems"].values())


# ---- found through the index ---------------------------------------------------------------------------------


def test_an_append_writes_one_posting_per_term_and_a_search_reads_them(room: RecordRoom) -> None:
    # Given an appended record with tags
    rec = room.append(room.bob, "Invoices restart numbering every January.", tags={"facet": "billing"})
    rid = rec["public_id"]
    # Then its postings are in the table, one per distinct word, tags included
    words = ["billing", "invoices", "restart", "numbering", "every", "january"]
    assert held(rid) == sorted(posting_of(room.ws, w) for w in words)
    # And a search finds it without reading the workspace's records: the Queries are of its words' postings
    with dynamodb_requests() as seen:
        assert room.found(room.bob, query="january invoices") == [rid]
    queried = {p["ExpressionAttributeValues"][":pk"]["S"] for op, p in seen if op == "Query"}
    assert queried == {posting_of(room.ws, w) for w in ("january", "invoices")}
    # And it is the postings that find it: without them the record is not found
    drop_postings(rid)
    assert room.found(room.bob, query="january invoices") == []


def test_a_session_record_is_indexed_under_its_own_layer(room: RecordRoom) -> None:
    rec = room.append(room.bob, "Staging password rotates monthly.", layer="Session", run_id="chat-1")
    assert posting_of(room.ws, "staging", "Session") in held(rec["public_id"])
    assert room.found(room.bob, query="staging", layer="Session") == [rec["public_id"]]
    assert room.found(room.bob, query="staging") == []


def test_only_the_first_terms_of_a_long_text_are_indexed(room: RecordRoom) -> None:
    words = [f"w{i:03d}x" for i in range(recordtext.MAX_INDEXED_TERMS + 10)]
    rec = room.append(room.bob, " ".join(words) + ".")
    assert len(postings(rec["public_id"])) == recordtext.MAX_INDEXED_TERMS
    assert room.found(room.bob, query=words[0]) == [rec["public_id"]]
    # A word past the indexed ones is not found by itself, but ranks the record when another word finds it
    assert room.found(room.bob, query=words[-1]) == []
    assert room.found(room.bob, query=f"{words[1]} {words[-1]}") == [rec["public_id"]]


# ---- changes move the postings -------------------------------------------------------------------------------


def test_an_edit_moves_the_postings_to_the_new_text(room: RecordRoom) -> None:
    old, new = unique_word(), unique_word()
    rec = room.append(room.bob, f"The vault code is {old} today.")
    r = room.update_r(
        room.bob, rec["public_id"], expected_lock_version=rec["lock_version"], content=f"The vault code is {new} today."
    )
    assert r.status_code == 200, r.text
    now = held(rec["public_id"])
    assert posting_of(room.ws, old) not in now
    assert posting_of(room.ws, new) in now
    assert len(now) == len(recordtext.index_terms(f"The vault code is {new} today."))
    assert room.found(room.bob, query=old) == []
    assert room.found(room.bob, query=new) == [rec["public_id"]]


def test_an_edit_that_repeats_a_word_moves_its_posting_to_the_new_weight(room: RecordRoom) -> None:
    rec = room.append(room.bob, "Retries back off slowly.")
    before = dict(postings(rec["public_id"]))
    r = room.update_r(
        room.bob, rec["public_id"], expected_lock_version=rec["lock_version"], content="Retries retries back off."
    )
    assert r.status_code == 200, r.text
    after = dict(postings(rec["public_id"]))
    retries = posting_of(room.ws, "retries")
    # One posting per word still, the repeated word's at a higher weight, the dropped word's gone
    assert set(after) == set(before) - {posting_of(room.ws, "slowly")}
    assert after[retries] > before[retries]


def test_a_merge_that_keeps_the_longer_text_indexes_its_new_words(room: RecordRoom) -> None:
    extra = unique_word()
    first = room.append(room.bob, "The deploy window opens at nine every weekday morning for the platform team")
    r = room.append_r(
        room.bob, content=f"The deploy window opens at nine every weekday morning for the platform team {extra}"
    )
    assert r.status_code == 200 and r.json()["content_replaced"] is True, r.text
    assert posting_of(room.ws, extra) in held(first["public_id"])
    assert room.found(room.bob, query=extra) == [first["public_id"]]


def test_an_edit_from_40_words_to_40_others_fits_one_commit_with_its_key(room: RecordRoom) -> None:
    # The worst case of the transaction: every posting removed and as many put, with the meters and the key
    before = " ".join(f"a{i:02d}x" for i in range(recordtext.MAX_INDEXED_TERMS))
    after = " ".join(f"b{i:02d}x" for i in range(recordtext.MAX_INDEXED_TERMS))
    rec = room.append(room.bob, before)
    r = room.update_r(
        room.bob,
        rec["public_id"],
        headers={"Idempotency-Key": uuid.uuid4().hex},
        expected_lock_version=rec["lock_version"],
        content=after,
    )
    assert r.status_code == 200, r.text
    assert held(rec["public_id"]) == sorted(posting_of(room.ws, w) for w in after.split())


# ---- removal leaves nothing ------------------------------------------------------------------------------------


def _anywhere(word: str) -> list[str]:
    """Every item whose key or attributes hold the word or its term hash."""
    marks = (word, kinds.term_hash(word))
    return [f"{i['pk']} {i['sk']}" for i in scan_table() if any(m in json.dumps(i, default=str) for m in marks)]


def test_a_deleted_record_leaves_no_posting(room: RecordRoom) -> None:
    secret = unique_word()
    rec = room.append(room.bob, f"The staging password is {secret}.", tags={"labels": ["creds"]})
    kept = room.append(room.bob, "The staging host is db-2.")
    assert postings(rec["public_id"])
    r = room.delete_r(room.bob, rec["public_id"], expected_lock_version=rec["lock_version"])
    assert r.status_code == 204, r.text
    assert postings(rec["public_id"]) == []
    assert _anywhere(secret) == []
    # The other record's postings are untouched
    assert room.found(room.bob, query="staging") == [kept["public_id"]]


def test_a_rejected_record_leaves_no_posting(room: RecordRoom) -> None:
    flagged = room.append(room.bob, INJECTION)
    assert postings(flagged["public_id"])
    r = room.review_r(room.ada, flagged["public_id"], "reject")
    assert r.status_code in (200, 204), r.text
    assert postings(flagged["public_id"]) == []


def test_an_edit_leaves_no_posting_of_the_removed_words(room: RecordRoom) -> None:
    secret = unique_word()
    rec = room.append(room.bob, f"Temporary token {secret} for the demo.")
    r = room.update_r(room.bob, rec["public_id"], expected_lock_version=rec["lock_version"], content="Token revoked.")
    assert r.status_code == 200, r.text
    assert _anywhere(secret) == []


# ---- what waits for review ------------------------------------------------------------------------------------


def pending_of(ws: str, layer: str = "Workspace") -> str:
    """The partition of a workspace layer's records waiting for review."""
    return keys.record_term_partition(ws, layer, PENDING[0])


def _flag(room: RecordRoom, who: Any) -> str:
    return str(room.append(who, INJECTION)["public_id"])


def test_a_curators_listing_of_what_waits_reads_its_postings_not_every_record(room: RecordRoom) -> None:
    # Given a workspace of many clean records and two waiting for review
    for i in range(40):
        room.append(room.bob, f"Runbook step {i}: {unique_word()}.")
    first, second = _flag(room, room.bob), _flag(room, room.alpha)
    assert pending_of(room.ws) in held(first) and pending_of(room.ws) in held(second)
    # When a curator lists what waits, with no query
    with dynamodb_requests() as seen:
        hits = room.search(room.cora, quarantine="pending")
    # Then it finds the two, newest first, by one Query of the pending postings and a read of those records
    assert [h["record"]["public_id"] for h in hits] == [second, first]
    queried = [p["ExpressionAttributeValues"][":pk"]["S"] for op, p in seen if op == "Query"]
    assert queried == [pending_of(room.ws)]
    assert keys_read(seen) <= 3 + 2 + 2  # the caller's batch, the two postings' records, the page


def test_a_record_leaves_the_listing_when_it_is_released_rejected_deleted_or_edited_clean(room: RecordRoom) -> None:
    released, rejected, deleted, edited = (_flag(room, room.bob) for _ in range(4))
    assert room.review_r(room.cora, released, "release").status_code == 200
    assert room.review_r(room.cora, rejected, "reject").status_code == 204
    # (its writer no longer sees it: a curator deletes and edits it)
    shown = room.show(room.ada, deleted)
    assert room.delete_r(room.ada, deleted, expected_lock_version=shown["lock_version"]).status_code == 204
    shown = room.show(room.ada, edited)
    r = room.update_r(room.ada, edited, expected_lock_version=shown["lock_version"], content="Nothing odd here.")
    assert r.status_code == 200 and r.json()["record"]["quarantine"] is None, r.text
    for rid in (released, rejected, deleted, edited):
        assert pending_of(room.ws) not in held(rid), rid
    assert room.found(room.cora, quarantine="pending") == []
    # And a clean record edited into one that waits joins it
    plain = room.append(room.bob, f"A plain note {unique_word()}.")
    clean = plain["public_id"]
    r = room.update_r(room.bob, clean, expected_lock_version=plain["lock_version"], content=INJECTION)
    assert r.status_code == 200 and r.json()["record"]["quarantine"]["status"] == "pending", r.text
    assert pending_of(room.ws) in held(clean)
    assert room.found(room.cora, quarantine="pending") == [clean]


def test_a_workspace_indexed_before_the_pending_postings_lists_by_reading_all_until_reindexed(
    room: RecordRoom,
) -> None:
    # Given a workspace whose records were indexed by words only (index version 1): no pending posting
    waiting = _flag(room, room.bob)
    clean = room.append(room.bob, "Deploys happen on Tuesdays.")["public_id"]
    drop_postings(waiting)
    get_store().ddb.update_item(
        TableName=get_store().table,
        Key=keys.wire(keys.workspace(room.ws)),
        UpdateExpression="SET records_index = :v",
        ExpressionAttributeValues={":v": {"N": "1"}},
    )
    # When a curator lists what waits, every record is read (the same answer), and words still use the index
    with dynamodb_requests() as seen:
        assert room.found(room.cora, quarantine="pending") == [waiting]
    assert not any(p["ExpressionAttributeValues"][":pk"]["S"].startswith(TERM) for op, p in seen if op == "Query")
    with dynamodb_requests() as seen:
        assert room.found(room.bob, query="tuesdays") == [clean]
    assert any(p["ExpressionAttributeValues"][":pk"]["S"].startswith(TERM) for op, p in seen if op == "Query")
    # When the operator reindexes it, the listing reads the pending postings
    assert cli.main(["reindex-records", "--workspace", room.ws]) == 0
    assert pending_of(room.ws) in held(waiting)
    with dynamodb_requests() as seen:
        assert room.found(room.cora, quarantine="pending") == [waiting]
    queried = [p["ExpressionAttributeValues"][":pk"]["S"] for op, p in seen if op == "Query"]
    assert queried == [pending_of(room.ws)]


# ---- a workspace from before the index ------------------------------------------------------------------------


def test_a_workspace_from_before_the_index_is_found_by_reading_all_then_reindexed(room: RecordRoom) -> None:
    # Given records written before the index existed: no postings, no mark on the workspace
    ids = [
        room.append(room.bob, text)["public_id"]
        for text in ("Backups run nightly.", "Backups are encrypted at rest.", "Restores are tested monthly.")
    ]
    session = room.append(room.bob, "Backups of the chat are kept.", layer="Session", run_id="r1")["public_id"]
    drop_postings()
    unmark(room.ws)
    # When it is searched, every record is read: the same results as ever
    with dynamodb_requests() as seen:
        assert set(room.found(room.bob, query="backups")) == set(ids[:2])
    assert not any(p["ExpressionAttributeValues"][":pk"]["S"].startswith(TERM) for op, p in seen if op == "Query")
    # When the operator reindexes it
    assert cli.main(["reindex-records", "--workspace", room.ws]) == 0
    # Then every record of both layers has its postings and the workspace is marked
    for rid in [*ids, session]:
        assert postings(rid), rid
    row = get_store().ddb.get_item(TableName=get_store().table, Key=keys.wire(keys.workspace(room.ws)))["Item"]
    assert row["records_index"] == {"N": str(recordtext.INDEX_VERSION)}
    # And searches read the postings, with the same answers
    with dynamodb_requests() as seen:
        assert set(room.found(room.bob, query="backups")) == set(ids[:2])
    assert any(p["ExpressionAttributeValues"][":pk"]["S"].startswith(TERM) for op, p in seen if op == "Query")
    assert room.found(room.bob, query="backups", layer="Session") == [session]
    # Running it again changes nothing
    before = sorted(postings())
    assert cli.main(["reindex-records"]) == 0  # every workspace not yet indexed: none is left
    assert sorted(postings()) == before


def test_reindexing_every_workspace_marks_each(room: RecordRoom) -> None:
    a = room.append(room.bob, "Alerts page the on-call.")["public_id"]
    b = room.append(room.bob, "Alerts go to the other room.", ws=room.other_ws)["public_id"]
    drop_postings()
    for ws in (room.ws, room.other_ws):
        unmark(ws)
    assert cli.main(["reindex-records"]) == 0
    assert postings(a) and postings(b)
    assert room.found(room.bob, query="alerts") == [a]
    assert room.found(room.bob, ws=room.other_ws, query="alerts") == [b]


def test_reindexing_an_unknown_workspace_says_so(capsys: pytest.CaptureFixture[str], api: Api) -> None:
    assert cli.main(["reindex-records", "--workspace", "no-such-workspace"]) == 2
    assert "No workspace" in capsys.readouterr().err


# ---- hostile input -------------------------------------------------------------------------------------------


def test_a_query_of_many_words_reads_a_bounded_number_of_postings_and_records(room: RecordRoom) -> None:
    # Given many records sharing the query's words
    for i in range(30):
        room.append(room.bob, f"Alpha beta gamma delta note {i} of the batch {unique_word()}.")
    # When the query is the longest allowed, of as many distinct words as fit
    query = " ".join(f"t{i:03d}" for i in range(250))[: 1024 - 40] + " alpha beta gamma delta"
    with dynamodb_requests() as seen:
        r = room.search_r(room.bob, query=query, limit=100)
    assert r.status_code == 200, r.text
    # Then it looks up at most MAX_SEARCHED_TERMS words and reads at most MAX_SEARCH_CANDIDATES records
    ops = Counter(op for op, _ in seen)
    assert ops["Query"] <= recordtext.MAX_SEARCHED_TERMS
    assert keys_read(seen) <= MAX_SEARCH_CANDIDATES + 3 + 100
    assert all(
        p.get("Limit", 0) <= MAX_SEARCH_CANDIDATES // recordtext.MAX_SEARCHED_TERMS for op, p in seen if op == "Query"
    )


def test_a_query_of_punctuation_reads_nothing(room: RecordRoom) -> None:
    room.append(room.bob, "Something to find.")
    with dynamodb_requests() as seen:
        r = room.search_r(room.bob, query="!!! ??? ...")
    assert r.status_code == 200 and r.json()["results"] == [], r.text
    assert {op for op, _ in seen} == {"BatchGetItem"}  # the token, workspace and membership only


def test_a_query_over_1024_characters_is_still_refused(room: RecordRoom) -> None:
    assert code(room.search_r(room.bob, query="word " * 300)) == (422, "validation_failed")


def test_index_terms_put_tags_first_and_stop_at_the_bound() -> None:
    from agent_memory.core.model import Author, TypedRecord

    content = " ".join(f"c{i}" for i in range(60))
    rec = TypedRecord(
        "r", "w", "Workspace", "fact", content, Author("human", "h"), "t", "t", facet="Billing", labels=("Q3",)
    )
    terms = tuple(term for term, _ in index_terms(rec))
    assert terms[:2] == ("billing", "q3")
    assert len(terms) == recordtext.MAX_INDEXED_TERMS
    assert recordtext.query_terms("a a b " + " ".join(f"x{i}" for i in range(40)))[:2] == ("a", "b")
    assert len(recordtext.query_terms(" ".join(f"x{i}" for i in range(40)))) == recordtext.MAX_SEARCHED_TERMS
