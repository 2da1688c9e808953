"""Searching typed records over HTTP (issue 15): BM25 ranking, exact filters, every exclusion (Session
records, superseded, expired, private to others, quarantined for non-curators, other workspaces), the
limit and cursor paging, and the query's refusals."""

from __future__ import annotations

from typing import Any

import pytest

from ..support import Api, code
from .record_world import RecordRoom, make_room
from .safe_content import INJECTION


@pytest.fixture
def room(api: Api) -> RecordRoom:
    return make_room(api)


def scores(hits: list[dict[str, Any]]) -> list[float]:
    return [h["score"] for h in hits]


# ---- ranking ------------------------------------------------------------------------------------------------


def test_the_record_matching_the_rarer_term_ranks_first(room: RecordRoom) -> None:
    # Four records say "deploy", one says "rollback"; all are five words long
    common = [
        room.append(room.bob, text)["public_id"]
        for text in (
            "We deploy the api nightly.",
            "Staging gets a deploy hourly.",
            "Every deploy needs two approvals.",
            "Friday deploy freezes start noon.",
        )
    ]
    rare = room.append(room.bob, "A rollback takes ten minutes.")["public_id"]
    hits = room.search(room.bob, query="deploy rollback")
    assert hits[0]["record"]["public_id"] == rare
    assert {h["record"]["public_id"] for h in hits} == {rare, *common}
    assert scores(hits) == sorted(scores(hits), reverse=True)
    assert all(s > 0 for s in scores(hits))


def test_more_matching_terms_rank_higher(room: RecordRoom) -> None:
    three = room.append(room.bob, "Postgres backups run hourly.")["public_id"]
    two = room.append(room.bob, "Postgres backups are encrypted.")["public_id"]
    one = room.append(room.bob, "Postgres upgrades need downtime.")["public_id"]
    room.append(room.bob, "Nothing here matches anything.")
    hits = room.search(room.bob, query="postgres backups hourly")
    assert [h["record"]["public_id"] for h in hits] == [three, two, one]
    assert scores(hits)[0] > scores(hits)[1] > scores(hits)[2] > 0


def test_tags_are_searched_with_the_content(room: RecordRoom) -> None:
    rec = room.append(room.bob, "Numbers restart every January.", tags={"facet": "billing", "labels": ["invoices"]})
    room.append(room.bob, "Numbers of tickets grow weekly.")
    assert room.found(room.bob, query="invoices") == [rec["public_id"]]
    assert room.found(room.bob, query="billing") == [rec["public_id"]]


def test_a_query_nothing_matches_finds_nothing(room: RecordRoom) -> None:
    room.append(room.bob, "Postgres backups run hourly.")
    r = room.search_r(room.bob, query="kubernetes")
    assert r.status_code == 200, r.text
    assert r.json() == {"results": [], "next_cursor": None}


# ---- filters ------------------------------------------------------------------------------------------------


def test_filters_are_applied_exactly(room: RecordRoom) -> None:
    made: dict[str, str] = {}
    made["plain"] = room.append(room.bob, "Widget plain fact.")["public_id"]
    made["decision"] = room.append(room.bob, "Widget decision taken.", type="decision")["public_id"]
    made["facet"] = room.append(room.bob, "Widget billing note.", tags={"facet": "billing"})["public_id"]
    made["facet_sub"] = room.append(room.bob, "Widget billingx note.", tags={"facet": "billingx"})["public_id"]
    made["run"] = room.append(room.bob, "Widget from run twelve.", run_id="run-12")["public_id"]
    made["run_other"] = room.append(room.bob, "Widget from run one.", run_id="run-1")["public_id"]
    made["user"] = room.append(room.bob, "Widget for user ann.", user_id="ann")["public_id"]
    made["user_other"] = room.append(room.bob, "Widget for user anne.", user_id="anne")["public_id"]
    made["session"] = room.append(room.bob, "Widget session note.", layer="Session", run_id="run-12")["public_id"]

    def found(**f: Any) -> set[str]:
        return set(room.found(room.bob, query="widget", limit=100, **f))

    workspace = {k: v for k, v in made.items() if k != "session"}
    assert found() == set(workspace.values())
    assert found(type="decision") == {made["decision"]}
    assert found(type="solution") == set()
    assert found(facet="billing") == {made["facet"]}
    assert found(run_id="run-12") == {made["run"]}
    assert found(user_id="ann") == {made["user"]}
    assert found(layer="Workspace") == set(workspace.values())
    assert found(layer="Session") == {made["session"]}
    assert found(layer="Session", run_id="run-12") == {made["session"]}
    assert found(layer="Session", run_id="run-1") == set()
    assert found(type="fact", run_id="run-12", facet="billing") == set()


def test_session_records_are_searched_only_when_asked_for(room: RecordRoom) -> None:
    raw = room.append(
        room.bob, "user: the staging password rotates monthly", layer="Session", type="raw", run_id="chat-1"
    )
    fact = room.append(room.bob, "Staging password rotates monthly.", layer="Session", run_id="chat-1")
    assert room.found(room.bob, query="staging password") == []
    assert set(room.found(room.bob, query="staging password", layer="Session")) == {raw["public_id"], fact["public_id"]}
    assert room.found(room.bob, query="staging password", layer="Session", type="raw") == [raw["public_id"]]


def test_superseded_records_are_excluded_unless_asked_for(room: RecordRoom) -> None:
    old = room.append(room.bob, "Lunch orders close at eleven.")
    new = room.append(room.bob, "Lunch orders close at noon.", supersedes=old["public_id"])
    assert room.found(room.bob, query="lunch orders") == [new["public_id"]]
    assert set(room.found(room.bob, query="lunch orders", include_superseded=True)) == {
        old["public_id"],
        new["public_id"],
    }
    assert room.found(room.bob, query="eleven") == []
    assert room.found(room.bob, query="eleven", include_superseded=True) == [old["public_id"]]


def test_expired_records_are_excluded_unless_asked_for(room: RecordRoom) -> None:
    ended = room.append(room.bob, "The office wifi code is orange.", valid_to="2020-01-31T00:00:00Z")
    live = room.append(room.bob, "The office wifi code is purple.", valid_to="2999-01-01")
    lasting = room.append(room.bob, "The office wifi code changes yearly.")
    assert set(room.found(room.bob, query="office wifi")) == {live["public_id"], lasting["public_id"]}
    assert set(room.found(room.bob, query="office wifi", include_expired=True)) == {
        ended["public_id"],
        live["public_id"],
        lasting["public_id"],
    }
    # Expired, it is still readable by id
    assert room.show(room.bob, ended["public_id"])["valid_to"] == "2020-01-31T00:00:00.000Z"


def test_private_records_are_found_by_their_author_only(room: RecordRoom) -> None:
    private = room.append(room.bob, "Remember to ask about the parking permit.", visibility="private")
    shared = room.append(room.alpha, "The parking permit is renewed in March.")
    assert set(room.found(room.bob, query="parking permit")) == {private["public_id"], shared["public_id"]}
    for who in (room.ada, room.alpha, room.vic, room.cora):
        assert room.found(who, query="parking permit") == [shared["public_id"]], who
        assert room.found(who, query="parking permit", include_superseded=True, include_expired=True) == [
            shared["public_id"]
        ]


def test_quarantined_records_are_found_by_curators_only(room: RecordRoom) -> None:
    flagged = room.append(room.bob, INJECTION)
    clean = room.append(room.bob, "Previous instructions for the deploy are in the runbook.")
    for who in (room.bob, room.alpha, room.vic):
        assert room.found(who, query="previous instructions") == [clean["public_id"]], who
    for who in room.curators():
        assert set(room.found(who, query="previous instructions")) == {flagged["public_id"], clean["public_id"]}


def test_search_never_returns_another_workspaces_records(room: RecordRoom) -> None:
    here = room.append(room.bob, "The coffee machine is descaled on Mondays.")
    there = room.append(room.bob, "The coffee machine is descaled on Tuesdays.", ws=room.other_ws)
    for who in (room.bob, room.cora, room.ada):
        assert room.found(who, query="coffee machine") == [here["public_id"]]
        assert room.found(who, ws=room.other_ws, query="coffee machine") == [there["public_id"]]
    # Someone who is not a member of the other workspace cannot search it at all
    assert code(room.search_r(room.dora, ws=room.other_ws, query="coffee")) == (404, "not_found")
    # Nor read its record through this one
    assert code(room.show_r(room.bob, there["public_id"])) == (404, "not_found")


# ---- limit and paging ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [0, 101, -1])
def test_a_limit_outside_1_to_100_is_refused(room: RecordRoom, limit: int) -> None:
    assert code(room.search_r(room.bob, query="anything", limit=limit)) == (400, "parameter_invalid")


def test_the_limit_bounds_a_page(room: RecordRoom) -> None:
    ids = [room.append(room.bob, f"Gadget inventory item {word}.")["public_id"] for word in ("one", "two", "three")]
    r = room.search_r(room.bob, query="gadget", limit=1)
    assert r.status_code == 200, r.text
    assert len(r.json()["results"]) == 1
    assert r.json()["next_cursor"] is not None
    r = room.search_r(room.bob, query="gadget", limit=100)
    assert {h["record"]["public_id"] for h in r.json()["results"]} == set(ids)
    assert r.json()["next_cursor"] is None


def test_paging_walks_every_result_exactly_once(room: RecordRoom) -> None:
    words = ["amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heath", "inlet", "juniper", "knoll"]
    ids = {room.append(room.bob, f"Sprocket {w} is stored in aisle {i}.")["public_id"] for i, w in enumerate(words)}
    room.append(room.bob, "Nothing to do with it.")
    everything = room.search(room.bob, query="sprocket aisle", limit=100)
    seen: list[str] = []
    walked: list[float] = []
    cursor = None
    pages = 0
    while True:
        body: dict[str, Any] = {"query": "sprocket aisle", "limit": 4}
        if cursor is not None:
            body["cursor"] = cursor
        r = room.search_r(room.bob, **body)
        assert r.status_code == 200, r.text
        page = r.json()
        assert len(page["results"]) <= 4
        seen += [h["record"]["public_id"] for h in page["results"]]
        walked += scores(page["results"])
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert pages < 10
    assert pages == 3
    assert len(seen) == len(set(seen)) == len(ids)
    assert set(seen) == ids
    # The pages are the one ranking, cut in order
    assert seen == [h["record"]["public_id"] for h in everything]
    assert walked == sorted(walked, reverse=True)


def test_a_cursor_from_another_search_is_refused(room: RecordRoom) -> None:
    for w in ("one", "two", "three"):
        room.append(room.bob, f"Gizmo spare part {w}.")
    r = room.search_r(room.bob, query="gizmo", limit=1)
    cursor = r.json()["next_cursor"]
    assert cursor is not None
    # The same cursor continues its own search
    assert room.search_r(room.bob, query="gizmo", limit=1, cursor=cursor).status_code == 200
    # With any other query or filter it is refused
    for other in ({"query": "spare"}, {"query": "gizmo", "type": "decision"}, {"query": "gizmo", "layer": "Session"}):
        assert code(room.search_r(room.bob, limit=1, cursor=cursor, **other)) == (400, "parameter_invalid"), other
    # As is anything that is not a cursor
    for junk in ("not-a-cursor", cursor[:-2], "eyJvIjotMSwiZiI6IngifQ"):
        assert code(room.search_r(room.bob, query="gizmo", cursor=junk)) == (400, "parameter_invalid"), junk


# ---- the query ----------------------------------------------------------------------------------------------


def test_a_search_without_a_query_is_refused(room: RecordRoom) -> None:
    assert code(room.search_r(room.bob)) == (400, "parameter_missing")
    assert code(room.search_r(room.bob, type="fact")) == (400, "parameter_missing")
    # Except for the quarantine filter, which goes without
    assert room.search_r(room.cora, quarantine="pending").status_code == 200


def test_a_query_over_1024_characters_is_refused(room: RecordRoom) -> None:
    rec = room.append(room.bob, "Longword appears here.")
    assert code(room.search_r(room.bob, query="x" * 1025)) == (422, "validation_failed")
    assert room.found(room.bob, query="longword " + "x" * 1015) == [rec["public_id"]]


def test_a_viewer_searches(room: RecordRoom) -> None:
    rec = room.append(room.bob, "Viewers can read the escalation policy.")
    assert room.found(room.vic, query="escalation policy") == [rec["public_id"]]
