"""Exporting a workspace's typed records over HTTP (issue 15): NDJSON, one record a line in the shape a
read by id answers, personal data masked, other authors' private records and quarantined ones left out,
paged with the Export-Next-Cursor header."""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from agent_memory_sdk.client import MemoryClient, ParameterInvalid
from agent_memory_sdk.local.runtime import LocalService

from ..support import Api, Who, client_room, code
from .runs import Run, make_run
from .safe_content import INJECTION, MASKED, PII_SAMPLES, assert_masked, export, lines, walk


def records_url(ws: str) -> str:
    return f"/workspaces/{ws}/records"


def export_url(ws: str) -> str:
    return f"{records_url(ws)}/export"


def append(api: Api, who: Who, ws: str, content: str, type_: str = "fact", **fields: Any) -> dict[str, Any]:
    """A new record (201), as the append answered it."""
    r = api.post(records_url(ws), who, {"record": {"content": content, "type": type_, **fields}})
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()["record"]
    return out


def show(api: Api, who: Who, ws: str, record_id: str) -> requests.Response:
    return api.get(f"{records_url(ws)}/{record_id}", who)


def unique(label: str) -> str:
    """Text no other record's shingles come near, so the duplicate check keeps each a record of its own."""
    return f"{label} {uuid.uuid4().hex} {uuid.uuid4().hex} {uuid.uuid4().hex}"


def ids(rows: list[dict[str, Any]]) -> list[str]:
    return [row["public_id"] for row in rows]


@pytest.fixture
def run(api: Api) -> Run:
    return make_run(api)


# ---- masking --------------------------------------------------------------------------------------------


def test_each_kind_of_personal_data_is_masked_in_the_export_and_the_record_keeps_it(run: Run) -> None:
    api, ws = run.api, run.ws
    # Given a record for each kind of personal data, written by a member
    written = {kind: append(api, run.bob, ws, text, tags={"facet": kind}) for kind, text in PII_SAMPLES.items()}
    # When a viewer of the workspace exports its records
    r = export(api, run.vic, export_url(ws))
    rows = {row["public_id"]: row for row in lines(r)}
    assert r.headers["content-type"] == "application/x-ndjson; charset=utf-8"
    assert "Export-Next-Cursor" not in r.headers
    # Then each line holds the record's text with its personal data masked, and nothing raw leaves
    assert set(rows) == {rec["public_id"] for rec in written.values()}
    for kind, rec in written.items():
        line = rows[rec["public_id"]]
        assert line["content"] == MASKED[kind]
        assert line["pii"] == [kind]
    assert_masked(r.text)
    # And the stored record still holds what was written, and each line is the record as a read answers it
    for kind, rec in written.items():
        got = show(api, run.vic, ws, rec["public_id"])
        assert got.status_code == 200, got.text
        stored = got.json()["record"]
        assert stored["content"] == PII_SAMPLES[kind]
        assert rows[rec["public_id"]] == {**stored, "content": MASKED[kind]}


def test_the_short_text_fields_beside_the_content_are_masked_too(run: Run) -> None:
    api, ws = run.api, run.ws
    # Given a clean record whose end user is an e-mail address and whose source is a phone call
    rec = append(
        api,
        run.bob,
        ws,
        "Prefers the reports as PDF every Monday.",
        "preference",
        user_id="ada.lovelace@example.com",
        source_ref="call from +1 (415) 555-0123",
        run_id="chat-301",
        tags={"facet": "reports", "labels": ["pdf", "ada.lovelace@example.com"]},
    )
    # When the records are exported
    r = export(api, run.ada, export_url(ws))
    (line,) = lines(r)
    # Then every writer-chosen text is masked; ids, clean text and what the service set stay as they were
    assert line["user_id"] == "[email]"
    assert line["source_ref"] == "call from " + "[phone ****0123]"
    assert line["tags"] == {"facet": "reports", "labels": ["pdf", "[email]"]}
    assert line["run_id"] == "chat-301"
    assert line["content"] == rec["content"]
    assert (line["public_id"], line["author"], line["pii"]) == (rec["public_id"], rec["author"], [])
    assert_masked(r.text)
    # And the record itself keeps them
    assert show(api, run.ada, ws, rec["public_id"]).json()["record"]["user_id"] == "ada.lovelace@example.com"


# ---- what an export holds -------------------------------------------------------------------------------


def test_private_records_of_others_and_quarantined_records_are_left_out_for_everyone(run: Run) -> None:
    api, ws = run.api, run.ws
    ada, bob, vic = run.ada, run.bob, run.vic
    # Given records of both layers: shared ones, a private one of Bob's, a quarantined one of Bob's, and a
    # shared record superseded by a newer one
    shared = append(api, ada, ws, unique("shared"))
    old = append(api, ada, ws, unique("old"), "decision")
    newer = append(api, ada, ws, unique("newer"), "decision", supersedes=old["public_id"])
    raw = append(api, bob, ws, "user: I want the reports as PDF.", "raw", layer="Session", run_id="chat-301")
    private = append(api, bob, ws, unique("bob's own"), visibility="private")
    flagged = append(api, bob, ws, INJECTION)
    assert flagged["quarantine"]["status"] == "pending"
    # The curator (Ada, who made the room) reads the quarantined record by id
    assert show(api, ada, ws, flagged["public_id"]).status_code == 200

    def exported(who: Who) -> list[str]:
        out, _ = walk(api, who, export_url(ws))
        return ids(out)

    everyone = {shared["public_id"], old["public_id"], newer["public_id"], raw["public_id"]}
    # When each reader exports: then the private record is its author's alone, and the quarantined one
    # is in nobody's export, the curator's included
    assert set(exported(ada)) == everyone
    assert set(exported(vic)) == everyone
    assert set(exported(bob)) == everyone | {private["public_id"]}
    # And the Workspace layer comes before the Session layer
    assert exported(ada)[-1] == raw["public_id"]
    # And a superseded record is exported with what superseded it
    rows = {row["public_id"]: row for row in walk(api, vic, export_url(ws))[0]}
    assert rows[old["public_id"]]["superseded_by"] == newer["public_id"]
    assert INJECTION not in json.dumps(list(rows.values()))
    # When the curator releases the quarantined record, then it is exported like any other
    r = api.post(f"{records_url(ws)}/{flagged['public_id']}/review", ada, {"review": {"decision": "release"}})
    assert r.status_code == 200, r.text
    assert flagged["public_id"] in exported(vic)


def test_a_viewer_exports_and_a_stranger_finds_no_workspace(run: Run) -> None:
    api, ws = run.api, run.ws
    append(api, run.bob, ws, "Ship on Friday, the release notes are in PR-482.")
    # A viewer reads records, so it may export them
    assert len(lines(export(api, run.vic, export_url(ws)))) == 1
    # A Human of the same account who is not a member, and one of another account: not found
    for who in (api.human(run.ada, "olga"), api.account("other", "sam")):
        r = export(api, who, export_url(ws))
        assert code(r) == (404, "not_found")
        assert "Friday" not in r.text
    # No token at all
    assert code(api.get(export_url(ws))) == (401, "not_authenticated")


# ---- paging ---------------------------------------------------------------------------------------------


@dataclass
class Filled:
    run: Run
    # Every record Bob's export holds, in no particular order
    expected: set[str]


@pytest.fixture
def filled(run: Run) -> Filled:
    api, ws = run.api, run.ws
    expected: set[str] = set()
    for n in range(9):
        expected.add(append(api, run.bob, ws, unique(f"note {n}"))["public_id"])
    for n in range(4):
        content = f"user: line {n} {uuid.uuid4().hex}"
        expected.add(append(api, run.bob, ws, content, "raw", layer="Session", run_id="r")["public_id"])
    # Records Bob's export must skip: Ada's private ones and a quarantined one
    for n in range(5):
        append(api, run.ada, ws, unique(f"ada's {n}"), visibility="private")
    append(api, run.ada, ws, INJECTION)
    return Filled(run, expected)


@pytest.mark.parametrize("per_page", [1, 3, 7])
def test_small_pages_walk_every_record_exactly_once(
    filled: Filled, monkeypatch: pytest.MonkeyPatch, per_page: int
) -> None:
    run = filled.run
    # Given the whole export in one page
    whole = lines(export(run.api, run.bob, export_url(run.ws)))
    assert set(ids(whole)) == filled.expected
    # When a page reads only a few records (the gateway runs the handlers in this process)
    monkeypatch.setattr("agent_memory.domain.records.service.EXPORT_PAGE_RECORDS", per_page)
    rows, pages = walk(run.api, run.bob, export_url(run.ws))
    # Then following the cursor yields every record exactly once, in the same order, the same lines
    assert rows == whole
    # And no page holds more than it may read, and every page but the last names the next one
    assert all(len(lines(p)) <= per_page for p in pages)
    assert len(pages) > 1
    assert all("Export-Next-Cursor" in p.headers for p in pages[:-1])
    assert "Export-Next-Cursor" not in pages[-1].headers


def test_a_page_stops_at_its_byte_bound(filled: Filled, monkeypatch: pytest.MonkeyPatch) -> None:
    run = filled.run
    whole = lines(export(run.api, run.bob, export_url(run.ws)))
    # When a page may hold fewer bytes than any one line
    monkeypatch.setattr("agent_memory.domain.records.service.EXPORT_PAGE_BYTES", 1)
    rows, pages = walk(run.api, run.bob, export_url(run.ws))
    # Then each page still holds one record (a page always makes progress), and together they are the export
    assert [len(lines(p)) for p in pages] == [1] * len(whole)
    assert rows == whole


def _cursor(raw: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(raw).encode()).decode().rstrip("=")


def test_a_cursor_that_no_export_of_this_workspace_answered_is_refused(
    filled: Filled, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = filled.run
    api = run.api
    monkeypatch.setattr("agent_memory.domain.records.service.EXPORT_PAGE_RECORDS", 2)
    cursor = export(api, run.bob, export_url(run.ws)).headers["Export-Next-Cursor"]
    fields = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    # Given a room of Bob's own elsewhere, whose export cursor names that room
    theirs = api.workspace(run.ada, "other room")
    api.member(run.ada, theirs, run.bob)
    append(api, run.ada, theirs, unique("elsewhere"))
    for bad in (
        "not a cursor!",
        cursor[:-3],
        cursor + "x",
        _cursor([1, 2]),
        _cursor({**fields, "l": "Memory"}),
        _cursor({**fields, "s": 8}),
        _cursor({**fields, "s": -1}),
        _cursor({**fields, "s": True}),
        _cursor({**fields, "a": "../../etc"}),
        _cursor({k: v for k, v in fields.items() if k != "w"}),
    ):
        # When it is sent, then it is refused and no record is answered
        r = export(api, run.bob, export_url(run.ws), bad)
        assert code(r) == (400, "parameter_invalid"), (bad, r.text)
        assert not any(rid in r.text for rid in filled.expected)
    # And one room's cursor does not open another room's export
    assert code(export(api, run.bob, export_url(theirs), cursor)) == (400, "parameter_invalid")
    # And the untouched cursor still works: followed to the end, it answers every record not yet exported
    first = lines(export(api, run.bob, export_url(run.ws)))
    rest: list[dict[str, Any]] = []
    page = export(api, run.bob, export_url(run.ws), cursor)
    while True:
        assert page.status_code == 200, page.text
        rest += lines(page)
        if "Export-Next-Cursor" not in page.headers:
            break
        page = export(api, run.bob, export_url(run.ws), page.headers["Export-Next-Cursor"])
    assert sorted(ids(first + rest)) == sorted(filled.expected)


# ---- the Python client ----------------------------------------------------------------------------------


def every(client: MemoryClient, ws: str) -> list[dict[str, Any]]:
    """Every page of a workspace's record export through the client, following its cursor."""
    rows: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(100):
        page, cursor = client.export_records(ws, cursor=cursor)
        rows += page
        if cursor is None:
            return rows
    raise AssertionError("the export never ends")


def test_the_client_appends_reads_searches_reviews_consolidates_and_exports_records(
    fresh: LocalService, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, owner, ws = client_room(fresh.url, fresh.operator_key)
    made = owner.create_human("bob")
    owner.add_member(ws, human_public_id=made["human"]["public_id"])
    bob: MemoryClient = owner.with_token(made["token"])
    # Appending with the caller's own Idempotency-Key: a resend answers the first answer
    first = bob.append_record(
        ws, PII_SAMPLES["email"], "fact", tags={"facet": "billing"}, source_ref="PR-482", idempotency_key="k-1"
    )
    again = bob.append_record(
        ws, PII_SAMPLES["email"], "fact", tags={"facet": "billing"}, source_ref="PR-482", idempotency_key="k-1"
    )
    assert (first["merged"], first["content_replaced"]) == (False, False)
    assert again == first
    rid = first["record"]["public_id"]
    # Reading, updating and searching
    assert bob.get_record(ws, rid)["content"] == PII_SAMPLES["email"]
    version = first["record"]["lock_version"]
    updated = bob.update_record(ws, rid, version, content=PII_SAMPLES["email"] + " Cc the finance team.")
    assert updated["lock_version"] == version + 1
    found = bob.search_records(ws, "invoice finance")
    assert [hit["record"]["public_id"] for hit in found["results"]] == [rid]
    # A quarantined record: hidden from its writer, released by the curator
    flagged = bob.append_record(ws, INJECTION, "fact")["record"]
    queue = owner.search_records(ws, quarantine="pending")
    assert [hit["record"]["public_id"] for hit in queue["results"]] == [flagged["public_id"]]
    released = owner.review_record(ws, flagged["public_id"], "release")
    assert released is not None and released["quarantine"]["status"] == "released"
    # Consolidating a run's raw lines into Workspace records
    bob.append_record(
        ws, "user: I want the reports as PDF every Monday, not Excel.", "raw", layer="Session", run_id="chat-301"
    )
    out = bob.consolidate(ws, "chat-301", extraction_instructions="Only reporting preferences.")
    assert (out["status"], out["extraction"]) == ("consolidated", "rules")
    assert out["created"] >= 1 and "note" in out
    # Exporting, page by page, masked
    monkeypatch.setattr("agent_memory.domain.records.service.EXPORT_PAGE_RECORDS", 1)
    rows = every(bob, ws)
    assert len(bob.export_records(ws)[0]) <= 1
    by_id = {row["public_id"]: row for row in rows}
    assert by_id[rid]["content"] == MASKED["email"] + " Cc the finance team."
    assert flagged["public_id"] in by_id
    assert_masked(json.dumps(rows))
    with pytest.raises(ParameterInvalid):
        bob.export_records(ws, cursor="not a cursor")
    # Deleting
    bob.delete_record(ws, rid, updated["lock_version"])
    assert rid not in ids(every(bob, ws))
