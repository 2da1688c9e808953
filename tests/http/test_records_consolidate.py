"""Consolidation over HTTP (issue 15): a run's Session `raw` lines become Workspace records, one per
clause, speaker prefixes stripped, typed by rule, each raw line consolidated once, also under a race of
concurrent calls, and a keyed call replayed."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from ..support import Api, Who, code
from .record_world import RecordRoom, make_room
from .test_races import client, race

SEED_LINE = "user: I want the reports as PDF every Monday, not Excel."
SEED_CLAUSE = "I want the reports as PDF every Monday, not Excel."
INSTRUCTIONS = "Extract only reporting and communication preferences."
NOTE = "extraction_instructions were ignored: no model is configured, so lines are split into clauses by rule."


@pytest.fixture
def room(api: Api) -> RecordRoom:
    return make_room(api)


def raw(room: RecordRoom, who: Who, content: str, run_id: str = "chat-301", **fields: Any) -> dict[str, Any]:
    return room.append(
        who,
        content,
        layer="Session",
        type="raw",
        run_id=run_id,
        source_kind=fields.pop("source_kind", "user"),
        **fields,
    )


def consolidated(room: RecordRoom, who: Who, run_id: str = "chat-301", **fields: Any) -> dict[str, Any]:
    r = room.consolidate_r(who, run_id=run_id, **fields)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def run_records(room: RecordRoom, run_id: str, query: str) -> list[dict[str, Any]]:
    """The Workspace records of a run a search for `query` finds, in rank order."""
    return [h["record"] for h in room.search(room.bob, query=query, run_id=run_id, limit=100)]


def test_the_seed_example_becomes_one_preference(room: RecordRoom) -> None:
    line = raw(room, room.bob, SEED_LINE)
    out = consolidated(room, room.bob, extraction_instructions=INSTRUCTIONS)
    assert out == {
        "status": "consolidated",
        "created": 1,
        "merged": 0,
        "extraction": "rules",
        "note": NOTE,
        "remaining": 0,
    }
    (rec,) = run_records(room, "chat-301", "reports PDF Monday")
    assert rec["content"] == SEED_CLAUSE
    assert (rec["layer"], rec["type"], rec["source_kind"]) == ("Workspace", "preference", "consolidation")
    assert (rec["source_ref"], rec["run_id"]) == (line["public_id"], "chat-301")
    assert rec["visibility"] == "workspace"
    # The raw line itself stays, in the Session layer
    assert room.show(room.bob, line["public_id"])["content"] == SEED_LINE


def test_without_instructions_there_is_no_note(room: RecordRoom) -> None:
    raw(room, room.bob, SEED_LINE)
    out = consolidated(room, room.bob)
    assert out == {"status": "consolidated", "created": 1, "merged": 0, "extraction": "rules", "remaining": 0}


def test_a_second_consolidation_creates_nothing(room: RecordRoom) -> None:
    raw(room, room.bob, SEED_LINE)
    assert consolidated(room, room.bob)["created"] == 1
    again = consolidated(room, room.alpha)
    assert (again["created"], again["merged"]) == (0, 0)
    (rec,) = run_records(room, "chat-301", "reports")
    assert rec["mention_count"] == 1
    # A new line of the same run is consolidated on the next call, and only it
    raw(room, room.bob, "assistant: Noted, the PDF goes to finance.")
    third = consolidated(room, room.bob)
    assert (third["created"], third["merged"]) == (1, 0)
    assert {r["content"] for r in run_records(room, "chat-301", "PDF")} == {
        SEED_CLAUSE,
        "Noted, the PDF goes to finance.",
    }


def test_a_multi_sentence_line_gives_one_record_per_clause_typed_by_rule(room: RecordRoom) -> None:
    line = raw(
        room,
        room.bob,
        "user: We decided to ship on Friday. Never push to main! The API uses JSON; I prefer tabs over spaces.",
        run_id="chat-302",
    )
    out = consolidated(room, room.bob, run_id="chat-302")
    assert (out["created"], out["merged"]) == (4, 0)
    found = run_records(room, "chat-302", "ship Friday push main API JSON tabs spaces")
    assert {r["content"]: r["type"] for r in found} == {
        "We decided to ship on Friday.": "decision",
        "Never push to main!": "violation",
        "The API uses JSON": "fact",
        "I prefer tabs over spaces.": "preference",
    }
    assert {r["source_ref"] for r in found} == {line["public_id"]}


def test_the_same_clause_from_two_lines_merges(room: RecordRoom) -> None:
    first = raw(room, room.bob, "user: I prefer dark mode.")
    raw(room, room.bob, "user: I prefer dark mode.")
    out = consolidated(room, room.bob)
    assert (out["created"], out["merged"]) == (1, 1)
    (rec,) = run_records(room, "chat-301", "dark mode")
    assert (rec["content"], rec["mention_count"], rec["source_ref"]) == ("I prefer dark mode.", 2, first["public_id"])


def test_only_the_runs_own_lines_are_consolidated(room: RecordRoom) -> None:
    raw(room, room.bob, SEED_LINE)
    raw(room, room.bob, "user: The staging database lives in eu-west-1.", run_id="chat-999")
    # A Session record that is not raw is not a line to consolidate
    room.append(room.bob, "Session scratch about the staging host.", layer="Session", run_id="chat-301")
    out = consolidated(room, room.bob)
    assert (out["created"], out["merged"]) == (1, 0)
    assert room.found(room.bob, query="staging") == []


def test_concurrent_consolidations_take_each_line_once(room: RecordRoom) -> None:
    lines = [
        "user: We decided to use Postgres. The cache is Redis.",
        "assistant: The deploy runs at noon; rollbacks take ten minutes.",
        "user: I want weekly summaries. Never email the customer directly.",
    ]
    for text in lines:
        raw(room, room.bob, text, run_id="race-1")
    clauses = [
        "We decided to use Postgres.",
        "The cache is Redis.",
        "The deploy runs at noon",
        "rollbacks take ten minutes.",
        "I want weekly summaries.",
        "Never email the customer directly.",
    ]

    def go(i: int) -> requests.Response:
        return room.consolidate_r(room.bob, api=client(room.api), run_id="race-1")

    answers = race(8, go)
    assert all(r.status_code == 200 for r in answers), [r.text for r in answers]
    assert sum(r.json()["created"] for r in answers) == len(clauses)
    assert sum(r.json()["merged"] for r in answers) == 0
    found = run_records(room, "race-1", "Postgres Redis deploy noon rollbacks weekly summaries email customer")
    assert sorted(r["content"] for r in found) == sorted(clauses)
    assert [r["mention_count"] for r in found] == [1] * len(clauses)
    # And a later call finds nothing left to do
    assert consolidated(room, room.bob, run_id="race-1")["created"] == 0


def test_an_idempotency_key_replays_the_first_answer(room: RecordRoom) -> None:
    raw(room, room.bob, SEED_LINE)
    key = {"Idempotency-Key": "consolidate-chat-301-1"}
    first = room.consolidate_r(room.bob, headers=key, run_id="chat-301", extraction_instructions=INSTRUCTIONS)
    assert first.status_code == 200, first.text
    assert first.json()["created"] == 1
    again = room.consolidate_r(room.bob, headers=key, run_id="chat-301", extraction_instructions=INSTRUCTIONS)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert again.headers.get("Idempotency-Replayed") == "true"
    # Nothing ran twice: one record
    assert len(run_records(room, "chat-301", "reports")) == 1
    # The key with another body is a conflict
    other = room.consolidate_r(room.bob, headers=key, run_id="chat-302")
    assert code(other) == (409, "idempotency_conflict")
    # Without the key, a call is a new one and finds nothing left
    assert consolidated(room, room.bob)["created"] == 0


def test_a_viewer_cannot_consolidate(room: RecordRoom) -> None:
    raw(room, room.bob, SEED_LINE)
    assert code(room.consolidate_r(room.vic, run_id="chat-301")) == (403, "not_authorized")
    assert run_records(room, "chat-301", "reports") == []
    # The line is still there to consolidate
    assert consolidated(room, room.bob)["created"] == 1


def test_a_consolidation_without_run_id_is_refused(room: RecordRoom) -> None:
    raw(room, room.bob, SEED_LINE)
    assert code(room.consolidate_r(room.bob)) == (400, "parameter_missing")
    assert code(room.consolidate_r(room.bob, extraction_instructions=INSTRUCTIONS)) == (400, "parameter_missing")
    assert run_records(room, "chat-301", "reports") == []


def test_consolidation_stays_in_its_workspace(room: RecordRoom) -> None:
    raw(room, room.bob, SEED_LINE)
    raw(room, room.bob, "user: I want the invoices as CSV.", ws=room.other_ws)
    assert consolidated(room, room.bob)["created"] == 1
    assert room.found(room.bob, query="invoices CSV") == []
    assert room.found(room.bob, ws=room.other_ws, query="reports PDF") == []
