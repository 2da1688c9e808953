"""A conversation's store entries: client state no prompt reads, conditioned, bounded, forked, never memory."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from ..support import Api, Who, code, conv_base, created
from .test_races import client, race
from .world import aws_calls

MAX = 64


def url(ws: str, conv: str, verb: str = "") -> str:
    return f"/workspaces/{ws}/conversations/{conv}/store_entries{verb}"


def put(
    api: Api, who: Who, ws: str, conv: str, key: Any, value: Any, expected: Any = None, **kw: Any
) -> requests.Response:
    return api.post(
        url(ws, conv), who, {"entry": {"key": key, "value": value, "expected_lock_version": expected}}, **kw
    )


def show(api: Api, who: Who, ws: str, conv: str, key: Any) -> requests.Response:
    return api.post(url(ws, conv, "/show"), who, {"entry": {"key": key}})


def delete(api: Api, who: Who, ws: str, conv: str, key: Any, expected: Any, **kw: Any) -> requests.Response:
    return api.post(url(ws, conv, "/delete"), who, {"entry": {"key": key, "expected_lock_version": expected}}, **kw)


def entries(api: Api, who: Who, ws: str, conv: str) -> list[dict[str, Any]]:
    r = api.get(url(ws, conv), who)
    assert r.status_code == 200, r.text
    out: list[dict[str, Any]] = r.json()["entries"]
    return out


def value_of(api: Api, who: Who, ws: str, conv: str, key: str) -> Any:
    r = show(api, who, ws, conv, key)
    assert r.status_code == 200, r.text
    return r.json()["entry"]["value"]


# ---- the four verbs -----------------------------------------------------------------------------------


def test_write_show_list_replace_and_delete_an_entry(api: Api) -> None:
    # Given a conversation
    ada, ws, conv = api.room()
    # When an entry is created with any JSON value
    r = put(api, ada, ws, conv, "ui.cursor", {"line": 3, "tags": ["a", "é"]})
    # Then it answers 201 with the entry, its version 0 and its compact JSON size
    assert r.status_code == 201, r.text
    entry = r.json()["entry"]
    assert entry["key"] == "ui.cursor" and entry["lock_version"] == 0
    assert entry["value"] == {"line": 3, "tags": ["a", "é"]}
    assert entry["bytesize"] == len('{"line":3,"tags":["a","é"]}'.encode())
    assert entry["updated_at"].endswith("Z")
    # And show answers it with its value, the listing without
    assert show(api, ada, ws, conv, "ui.cursor").json()["entry"] == entry
    assert entries(api, ada, ws, conv) == [{k: v for k, v in entry.items() if k != "value"}]
    # When it is replaced at its version, then deleted at the next
    r = put(api, ada, ws, conv, "ui.cursor", None, 0)
    assert r.status_code == 201, r.text
    assert r.json()["entry"]["lock_version"] == 1 and r.json()["entry"]["value"] is None
    assert value_of(api, ada, ws, conv, "ui.cursor") is None
    assert code(delete(api, ada, ws, conv, "ui.cursor", 1)) == (204, None)
    # Then it is gone
    assert code(show(api, ada, ws, conv, "ui.cursor")) == (404, "store_entry_not_found")
    assert entries(api, ada, ws, conv) == []


def test_the_listing_is_ordered_by_key_and_values_of_every_json_type_round_trip(api: Api) -> None:
    ada, ws, conv = api.room()
    values = {"b": 1.5, "a": "text", "c": [1, [2]], "d": True, "e": None, "f": {"x": {}}}
    for key, value in values.items():
        assert put(api, ada, ws, conv, key, value).status_code == 201
    assert [e["key"] for e in entries(api, ada, ws, conv)] == sorted(values)
    for key, value in values.items():
        assert value_of(api, ada, ws, conv, key) == value


def test_stale_versions_and_absent_entries_are_stale_object(api: Api) -> None:
    ada, ws, conv = api.room()
    assert put(api, ada, ws, conv, "k", 1).status_code == 201
    # A create of a key that exists, a replace at a wrong version or of an absent key, a delete likewise
    assert code(put(api, ada, ws, conv, "k", 2)) == (409, "stale_object")
    assert code(put(api, ada, ws, conv, "k", 2, 5)) == (409, "stale_object")
    assert code(put(api, ada, ws, conv, "absent", 2, 0)) == (409, "stale_object")
    assert code(delete(api, ada, ws, conv, "k", 3)) == (409, "stale_object")
    assert code(delete(api, ada, ws, conv, "absent", 0)) == (409, "stale_object")
    # And nothing changed
    assert value_of(api, ada, ws, conv, "k") == 1
    assert entries(api, ada, ws, conv)[0]["lock_version"] == 0


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"entry": {"key": "k", "value": 1}}, (400, "parameter_missing")),
        ({"entry": {"key": "k", "expected_lock_version": None}}, (400, "parameter_missing")),
        ({"entry": {"value": 1, "expected_lock_version": None}}, (400, "parameter_missing")),
        ({}, (400, "parameter_missing")),
        ({"entry": {"key": "", "value": 1, "expected_lock_version": None}}, (400, "parameter_invalid")),
        ({"entry": {"key": "a/b", "value": 1, "expected_lock_version": None}}, (400, "parameter_invalid")),
        ({"entry": {"key": "k" * 129, "value": 1, "expected_lock_version": None}}, (400, "parameter_invalid")),
        ({"entry": {"key": "spaced key", "value": 1, "expected_lock_version": None}}, (400, "parameter_invalid")),
        ({"entry": {"key": 7, "value": 1, "expected_lock_version": None}}, (400, "parameter_invalid")),
        ({"entry": {"key": "k", "value": 1, "expected_lock_version": -1}}, (400, "parameter_invalid")),
        ({"entry": {"key": "k", "value": 1, "expected_lock_version": "0"}}, (400, "parameter_invalid")),
    ],
)
def test_a_write_without_its_fields_or_with_a_bad_key_is_refused(
    api: Api, body: dict[str, Any], expected: tuple[int, str]
) -> None:
    ada, ws, conv = api.room()
    assert code(api.post(url(ws, conv), ada, body)) == expected
    assert entries(api, ada, ws, conv) == []


def test_keys_of_the_whole_grammar_are_accepted_and_bad_keys_refused_on_every_verb(api: Api) -> None:
    ada, ws, conv = api.room()
    key = "Az09._:-" + "x" * 120
    assert put(api, ada, ws, conv, key, 1).status_code == 201
    assert value_of(api, ada, ws, conv, key) == 1
    assert code(show(api, ada, ws, conv, "bad/key")) == (400, "parameter_invalid")
    assert code(delete(api, ada, ws, conv, "bad key", 0)) == (400, "parameter_invalid")
    assert code(api.post(url(ws, conv, "/delete"), ada, {"entry": {"key": key}})) == (400, "parameter_missing")
    # A delete must name the version it read: null creates only
    assert code(delete(api, ada, ws, conv, key, None)) == (400, "parameter_invalid")


def test_values_are_bounded_at_16_kib_of_compact_json(api: Api) -> None:
    ada, ws, conv = api.room()
    # A string value of 16384 bytes with its quotes fits; one byte more does not
    fits = "x" * (16 * 1024 - 2)
    r = put(api, ada, ws, conv, "big", fits)
    assert r.status_code == 201, r.text
    assert r.json()["entry"]["bytesize"] == 16 * 1024
    assert code(put(api, ada, ws, conv, "bigger", fits + "x")) == (422, "store_entry_too_large")
    # Measured as compact JSON: spaces a client put between members do not count
    spaced = {"k": "x" * (16 * 1024 - 8)}
    assert put(api, ada, ws, conv, "spaced", spaced).status_code == 201
    # A replace past the bound changes nothing
    assert code(put(api, ada, ws, conv, "big", fits + "xx", 0)) == (422, "store_entry_too_large")
    assert value_of(api, ada, ws, conv, "big") == fits


def test_64_entries_fit_and_the_65th_is_store_full_while_a_replace_still_lands(api: Api) -> None:
    ada, ws, conv = api.room()
    big = "v" * (16 * 1024 - 2)  # full-size values: 64 of them are 1 MiB, more than one item holds
    for i in range(MAX):
        assert put(api, ada, ws, conv, f"k{i:02d}", big).status_code == 201, i
    assert code(put(api, ada, ws, conv, "one-more", 1)) == (422, "store_full")
    assert len(entries(api, ada, ws, conv)) == MAX
    # A full store can still be rewritten, and a delete makes room
    assert put(api, ada, ws, conv, "k00", "small", 0).status_code == 201
    assert code(delete(api, ada, ws, conv, "k01", 0)) == (204, None)
    assert put(api, ada, ws, conv, "one-more", 1).status_code == 201
    assert value_of(api, ada, ws, conv, "k63") == big


def test_concurrent_creates_of_100_keys_fill_exactly_64(api: Api) -> None:
    ada, ws, conv = api.room()
    results = race(100, lambda i: put(client(api), ada, ws, conv, f"key-{i}", i))
    counts = sorted(code(r) for r in results)
    assert counts.count((201, None)) == MAX
    assert counts.count((422, "store_full")) == 100 - MAX
    assert len(entries(api, ada, ws, conv)) == MAX


def test_concurrent_creates_of_one_key_have_one_winner(api: Api) -> None:
    ada, ws, conv = api.room()
    results = race(16, lambda i: put(client(api), ada, ws, conv, "same", i))
    assert sorted(code(r) for r in results).count((201, None)) == 1
    assert {code(r) for r in results} == {(201, None), (409, "stale_object")}
    assert len(entries(api, ada, ws, conv)) == 1


# ---- who may, and when ----------------------------------------------------------------------------------


def test_viewers_read_members_write_and_strangers_see_nothing(api: Api) -> None:
    ada, ws, conv = api.room()
    assert put(api, ada, ws, conv, "k", 1).status_code == 201
    viewer, member, stranger = api.human(ada, "vic"), api.human(ada, "meg"), api.human(ada, "sam")
    api.member(ada, ws, viewer, "viewer")
    api.member(ada, ws, member, "member")
    # A viewer reads
    assert value_of(api, viewer, ws, conv, "k") == 1
    assert len(entries(api, viewer, ws, conv)) == 1
    # But writes nothing
    assert code(put(api, viewer, ws, conv, "k2", 1)) == (403, "not_authorized")
    assert code(delete(api, viewer, ws, conv, "k", 0)) == (403, "not_authorized")
    # A member writes
    assert put(api, member, ws, conv, "k", 2, 0).status_code == 201
    # Someone outside the workspace sees nothing
    assert code(api.get(url(ws, conv), stranger)) == (404, "not_found")
    assert code(show(api, stranger, ws, conv, "k")) == (404, "not_found")
    assert code(put(api, stranger, ws, conv, "k", 3, 1)) == (404, "not_found")
    # And without a token nothing at all
    assert code(api.get(url(ws, conv))) == (401, "not_authenticated")


def test_an_archived_conversation_keeps_its_entries_readable_and_refuses_writes(api: Api) -> None:
    ada, ws, conv = api.room()
    assert put(api, ada, ws, conv, "k", 1).status_code == 201
    assert api.post(f"/workspaces/{ws}/conversations/{conv}/archive", ada).status_code == 200
    assert value_of(api, ada, ws, conv, "k") == 1
    assert code(put(api, ada, ws, conv, "k", 2, 0)) == (409, "conversation_archived")
    assert code(put(api, ada, ws, conv, "new", 2)) == (409, "conversation_archived")
    assert code(delete(api, ada, ws, conv, "k", 0)) == (409, "conversation_archived")
    assert value_of(api, ada, ws, conv, "k") == 1


# ---- never memory ---------------------------------------------------------------------------------------


def test_entries_are_not_memory_and_bump_nothing(api: Api) -> None:
    # Given a conversation with one document
    ada, ws, conv = api.room()
    base = conv_base(ws, conv)
    created(api.write(ada, base, "conversation/plan.md", "the plan"))
    before = api.show_conversation(ada, ws, conv)
    listing = api.ls(ada, base).json()
    block = api.post(f"/workspaces/{ws}/conversations/{conv}/memory_block", ada, {"memory_block": {}}).json()
    # When entries are written, replaced and deleted, with text the grep would match
    assert put(api, ada, ws, conv, "plan", "the plan is secret").status_code == 201
    assert put(api, ada, ws, conv, "plan", "the plan is secret too", 0).status_code == 201
    assert put(api, ada, ws, conv, "other", {"plan": "the plan"}).status_code == 201
    assert code(delete(api, ada, ws, conv, "other", 0)) == (204, None)
    # Then the context revision did not move
    assert api.show_conversation(ada, ws, conv) == before
    # And the memory listing, the block and grep are what they were
    assert api.ls(ada, base).json() == listing
    assert api.post(f"/workspaces/{ws}/conversations/{conv}/memory_block", ada, {"memory_block": {}}).json() == block
    hits = api.grep(ada, base, "secret").json()
    assert hits["matches"] == []
    # And the model's tools see no entry either
    r = api.post(f"/workspaces/{ws}/conversations/{conv}/executions", ada, {"execution": {}})
    assert r.status_code == 201, r.text
    ex = r.json()["execution"]["public_id"]
    ls = api.post(f"/executions/{ex}/tools/memory_ls", ada, {"input": {"path": "conversation/"}})
    assert ls.status_code == 200, ls.text
    assert "plan.md" in ls.text and "other" not in ls.text and "secret" not in ls.text
    read = api.post(f"/executions/{ex}/tools/memory_read", ada, {"input": {"path": "conversation/plan.md"}})
    assert read.status_code == 200, read.text
    assert "the plan" in read.text and "secret" not in read.text


# ---- forks ----------------------------------------------------------------------------------------------


def test_a_fork_copies_the_entries_in_its_own_requests_and_both_sides_are_independent_afterwards(api: Api) -> None:
    # Given a parent with 64 documents and 64 full-size entries
    ada, ws, parent = api.room()
    base = conv_base(ws, parent)
    for i in range(MAX):
        created(api.write(ada, base, f"conversation/d{i:02d}.md", f"doc {i}"))
    big = "e" * (16 * 1024 - 2)
    for i in range(MAX):
        assert put(api, ada, ws, parent, f"k{i:02d}", big if i % 2 else i).status_code == 201
    listed = entries(api, ada, ws, parent)
    # When it is forked
    with aws_calls() as seen:
        r = api.post(f"/workspaces/{ws}/conversations/{parent}/fork", ada)
    assert r.status_code == 201, r.text
    child = r.json()["conversation"]["public_id"]
    # Then the fork cost what a fork always costs: no request more
    dynamo = {k.split(":", 1)[1]: n for k, n in seen.items() if k.startswith("dynamodb:")}
    assert dynamo == {"BatchGetItem": 1, "UpdateItem": 1, "Query": 1, "TransactWriteItems": 2}
    assert not any(k.startswith("s3:") for k in seen)
    # And the child holds the very entries
    assert entries(api, ada, ws, child) == listed
    assert value_of(api, ada, ws, child, "k01") == big and value_of(api, ada, ws, child, "k02") == 2
    # When each side then changes its own entries
    assert put(api, ada, ws, child, "k02", "child's", 0).status_code == 201
    assert code(delete(api, ada, ws, parent, "k03", 0)) == (204, None)
    assert put(api, ada, ws, parent, "k02", "parent's", 0).status_code == 201
    # Then neither sees the other's
    assert value_of(api, ada, ws, child, "k02") == "child's"
    assert value_of(api, ada, ws, parent, "k02") == "parent's"
    assert value_of(api, ada, ws, child, "k03") == big
    assert code(show(api, ada, ws, parent, "k03")) == (404, "store_entry_not_found")
    # And the child is as full as its parent was: the 65th entry is refused there too
    assert code(put(api, ada, ws, child, "more", 1)) == (422, "store_full")


def test_a_fork_of_a_conversation_without_entries_has_none(api: Api) -> None:
    ada, ws, parent = api.room()
    r = api.post(f"/workspaces/{ws}/conversations/{parent}/fork", ada)
    assert r.status_code == 201, r.text
    assert entries(api, ada, ws, r.json()["conversation"]["public_id"]) == []


# ---- idempotency ----------------------------------------------------------------------------------------


def test_a_keyed_write_and_delete_happen_once_and_answer_the_same_twice(api: Api) -> None:
    ada, ws, conv = api.room()
    first = put(api, ada, ws, conv, "k", 1, headers={"Idempotency-Key": "w-1"})
    again = put(api, ada, ws, conv, "k", 1, headers={"Idempotency-Key": "w-1"})
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    assert entries(api, ada, ws, conv)[0]["lock_version"] == 0
    # The same key with another body is a conflict
    assert code(put(api, ada, ws, conv, "k", 2, headers={"Idempotency-Key": "w-1"})) == (409, "idempotency_conflict")
    gone = delete(api, ada, ws, conv, "k", 0, headers={"Idempotency-Key": "d-1"})
    replay = delete(api, ada, ws, conv, "k", 0, headers={"Idempotency-Key": "d-1"})
    assert gone.status_code == replay.status_code == 204
    # An unkeyed resend of the delete is stale: the entry is gone
    assert code(delete(api, ada, ws, conv, "k", 0)) == (409, "stale_object")


def test_reads_cost_one_batch_and_a_write_one_transaction_more(api: Api) -> None:
    ada, ws, conv = api.room()
    with aws_calls() as seen:
        assert put(api, ada, ws, conv, "k", 1).status_code == 201
    assert dict(seen) == {"dynamodb:BatchGetItem": 1, "dynamodb:TransactWriteItems": 1}
    with aws_calls() as seen:
        entries(api, ada, ws, conv)
        value_of(api, ada, ws, conv, "k")
    assert dict(seen) == {"dynamodb:BatchGetItem": 2}
