"""Exports over HTTP (issue 12): a room's memory (every workspace/ and conversation/ document of the
workspace) for its members, and a person's own user/ rows, as NDJSON with every span of personal data
masked, paged with the Export-Next-Cursor header."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import pytest

from ..support import Api, Who, code, conv_base
from .runs import Run, make_run
from .safe_content import (
    INJECTION,
    INJECTION_RULES,
    MASKED,
    PII_SAMPLES,
    PROFILE,
    PROFILE_EXPORT,
    assert_masked,
    export,
    lines,
    memory,
    pair_of,
    pending,
    room_export_url,
    walk,
)

LINE_KEYS = {
    "anchor",
    "path",
    "public_id",
    "lock_version",
    "written_at",
    "written_by",
    "description",
    "pii",
    "quarantine",
    "content",
}


@dataclass
class Room:
    """A room with memory in every place an export walks, and in places it must not."""

    run: Run
    fork: str
    second: str
    empty: str
    # (anchor public_id, path) -> the content the export must answer for it
    expected: dict[tuple[str, str], str]

    @property
    def url(self) -> str:
        return room_export_url(self.run.ws)


def build_room(api: Api) -> Room:
    run = make_run(api)
    ada, bob, ws = run.ada, run.bob, run.ws
    expected: dict[tuple[str, str], str] = {}

    def put(who: Who, base: str, anchor: str, path: str, text: str) -> dict[str, Any]:
        doc = memory(api.write(who, base, path, text))
        expected[(anchor, path)] = text
        return doc

    # The workspace's own documents: one with an e-mail address, one with a card number
    put(ada, run.ws_base, ws, "workspace/team.md", "Team lead: Ada. " + PII_SAMPLES["email"])
    put(bob, run.ws_base, ws, "workspace/billing.md", PII_SAMPLES["card"])
    # The main conversation: a clean plan, a contact sheet (phone and e-mail) and a quarantined note
    plan = put(ada, run.base, run.conv, "conversation/plan.md", "Ship on Friday.\n")
    put(ada, run.base, run.conv, "conversation/contacts.md", PII_SAMPLES["phone"] + "\n" + PII_SAMPLES["email"])
    put(bob, run.base, run.conv, "conversation/odd.md", INJECTION)
    # A fork of it that then goes its own way
    r = api.post(f"/workspaces/{ws}/conversations/{run.conv}/fork", ada)
    assert r.status_code == 201, r.text
    fork = str(r.json()["conversation"]["public_id"])
    fork_base = conv_base(ws, fork)
    for (anchor, path), text in list(expected.items()):
        if anchor == run.conv:
            expected[(fork, path)] = text
    memory(api.write(ada, fork_base, "conversation/plan.md", "Ship on Monday instead.\n", pair_of(plan)))
    expected[(fork, "conversation/plan.md")] = "Ship on Monday instead.\n"
    put(ada, fork_base, fork, "conversation/tax.md", PII_SAMPLES["us_ssn"] + " " + PII_SAMPLES["tr_national_id"])
    # A second conversation with a bank account, and a third with nothing
    second = run.conversation()
    put(bob, conv_base(ws, second), second, "conversation/refund.md", PII_SAMPLES["iban"])
    empty = run.conversation()
    # And memory outside the room's own scopes, which the room's export must leave out: Ada's user/ rows,
    # the answering agent's agent/ rows
    memory(api.write(ada, PROFILE, "user/private.md", "My own note. " + PII_SAMPLES["email"]))
    memory(api.write(ada, run.base, "agent/style.md", "Answer briefly."))
    return Room(run, fork, second, empty, expected)


@pytest.fixture
def room(api: Api) -> Room:
    return build_room(api)


def keyed(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for line in rows:
        key = (line["anchor"]["public_id"], line["path"])
        assert key not in out, f"{key} exported twice"
        out[key] = line
    return out


# ---- the room's export --------------------------------------------------------------------------------


def test_a_room_export_holds_every_workspace_and_conversation_document_masked(room: Room) -> None:
    run = room.run
    # When a member exports the room
    r = export(run.api, run.bob, room.url)
    rows = lines(r)
    # Then it fits one page: no cursor
    assert "Export-Next-Cursor" not in r.headers
    # And every workspace/ document and every conversation/ document of each conversation (the fork's
    # own versions included) is there exactly once, and nothing else
    by_key = keyed(rows)
    assert set(by_key) == set(room.expected)
    for line in rows:
        assert set(line) == LINE_KEYS
        scope = "workspace" if line["anchor"]["public_id"] == run.ws else "conversation"
        assert line["anchor"]["scope"] == scope
        assert line["path"].startswith(f"{scope}/")
    # The workspace's documents come first, then the conversations in the order they were created
    anchors = list(dict.fromkeys(line["anchor"]["public_id"] for line in rows))
    assert anchors == [run.ws, run.conv, room.fork, room.second]

    # And each matched span is masked, the rest of the text kept
    assert by_key[(run.ws, "workspace/billing.md")]["content"] == MASKED["card"]
    assert by_key[(run.ws, "workspace/team.md")]["content"] == "Team lead: Ada. " + MASKED["email"]
    contacts = MASKED["phone"] + "\n" + MASKED["email"]
    assert by_key[(run.conv, "conversation/contacts.md")]["content"] == contacts
    assert by_key[(room.fork, "conversation/contacts.md")]["content"] == contacts
    assert by_key[(room.fork, "conversation/tax.md")]["content"] == MASKED["us_ssn"] + " " + MASKED["tr_national_id"]
    assert by_key[(room.second, "conversation/refund.md")]["content"] == MASKED["iban"]
    assert by_key[(room.fork, "conversation/plan.md")]["content"] == "Ship on Monday instead.\n"
    assert by_key[(run.conv, "conversation/plan.md")]["content"] == "Ship on Friday.\n"
    # with the tags beside it
    assert by_key[(run.conv, "conversation/contacts.md")]["pii"] == ["email", "phone"]
    assert by_key[(run.conv, "conversation/plan.md")]["pii"] == []
    # And no raw e-mail address, card, IBAN, phone, ID or SSN is anywhere in the body
    assert_masked(r.text)

    # A quarantined document is exported too, marked (an export is for people)
    odd = by_key[(run.conv, "conversation/odd.md")]
    assert odd["quarantine"] == pending(INJECTION_RULES)
    assert odd["content"] == INJECTION
    # And each line names the version it holds, as the door shows it
    shown = memory(run.api.show(run.ada, conv_base(run.ws, room.fork), "conversation/plan.md"), 200)
    line = by_key[(room.fork, "conversation/plan.md")]
    assert (line["public_id"], line["lock_version"], line["written_at"], line["written_by"]) == (
        shown["public_id"],
        shown["lock_version"],
        shown["written_at"],
        shown["written_by"],
    )


def test_every_member_gets_the_same_export_and_the_stored_text_stays_unmasked(room: Room) -> None:
    run = room.run
    # When the creator, a member and an agent member export the room
    bodies = {who.public_id: export(run.api, who, room.url) for who in (run.ada, run.bob, run.alpha)}
    # Then all three get the same documents
    keys = [set(keyed(lines(r))) for r in bodies.values()]
    assert keys[0] == keys[1] == keys[2] == set(room.expected)
    # And exporting changed nothing: the doors still show the text as written
    shown = memory(run.api.show(run.ada, run.ws_base, "workspace/billing.md"), 200)
    assert shown["content"] == PII_SAMPLES["card"]


def test_a_skills_description_is_masked_like_its_content(api: Api) -> None:
    # Given a workspace skill whose description and instructions both name a person's contact details
    ada, ws, _ = api.room()
    text = "# Refunds\n" + PII_SAMPLES["phone"] + "\n"
    r = api.write(
        ada,
        f"/workspaces/{ws}/memory",
        "workspace/skills/refunds",
        text,
        description="Ask ada.lovelace@example.com first",
    )
    # (the description is scanned with the text, since a model reads it in the skills catalog)
    assert memory(r)["pii"] == ["email", "phone"]
    # When the room is exported
    r = export(api, ada, room_export_url(ws))
    (line,) = lines(r)
    # Then neither the description nor the content holds the raw details
    assert line["description"] == "Ask [email] first"
    assert line["content"] == "# Refunds\n" + MASKED["phone"] + "\n"
    assert_masked(r.text)


def test_a_viewer_is_refused_and_a_stranger_sees_nothing(room: Room) -> None:
    run = room.run
    api = run.api
    # A viewer of the room reads its memory through the doors, but may not export it
    assert api.ls(run.vic, run.ws_base).status_code == 200
    r = export(api, run.vic, room.url)
    assert code(r) == (403, "not_authorized")
    assert_masked(r.text)
    # A Human of the same account who is not a member, and one of another account: not found
    outsider = api.human(run.ada, "olga")
    stranger = api.account("other", "sam")
    for who in (outsider, stranger):
        r = export(api, who, room.url)
        assert code(r) == (404, "not_found")
        assert "Ship on" not in r.text
    # No token at all
    assert code(api.get(room.url)) == (401, "not_authenticated")


@pytest.mark.parametrize(("per_page", "per_query"), [(1, 1), (2, 2), (3, 16), (5, 1)])
def test_small_pages_walk_every_document_exactly_once(
    room: Room, monkeypatch: pytest.MonkeyPatch, per_page: int, per_query: int
) -> None:
    run = room.run
    # Given the export of the whole room in one page
    whole = lines(export(run.api, run.bob, room.url))
    # When pages hold only a few documents and the room's conversations are read a few at a time (the
    # gateway runs the handlers in this process)
    monkeypatch.setattr("agent_memory.render.export.EXPORT_PAGE_DOCUMENTS", per_page)
    monkeypatch.setattr("agent_memory.render.export._CONVERSATIONS_PER_QUERY", per_query)
    rows, pages = walk(run.api, run.bob, room.url)
    # Then following the cursor yields every document exactly once, in the same order, the same lines
    assert len(keyed(rows)) == len(rows)
    assert rows == whole
    # And no page is larger than asked, every page but the last names the next one
    assert all(len(lines(p)) <= per_page for p in pages)
    assert len(pages) >= -(-len(whole) // per_page)
    assert all("Export-Next-Cursor" in p.headers for p in pages[:-1])
    # And no page of it holds raw personal data
    for p in pages:
        assert_masked(p.text)


def _cursor(raw: dict[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(raw).encode()).decode().rstrip("=")


def test_a_tampered_cursor_is_refused(room: Room, monkeypatch: pytest.MonkeyPatch) -> None:
    run = room.run
    api = run.api
    monkeypatch.setattr("agent_memory.render.export.EXPORT_PAGE_DOCUMENTS", 2)
    cursor = export(api, run.bob, room.url).headers["Export-Next-Cursor"]
    # Given another account's room with a conversation note
    sam, their_ws, their_conv = api.room()
    memory(api.write(sam, conv_base(their_ws, their_conv), "conversation/secret.md", "Their launch date is May 3."))
    mine = [run.conv, room.fork, room.second]
    for bad in (
        "not a cursor!",
        cursor[:-3],
        cursor + "x",
        base64.urlsafe_b64encode(b"[1, 2]").decode(),
        _cursor({"a": run.conv}),
        # well formed, but naming a conversation that is not this room's: another account's, a made-up
        # one, the caller's own id
        _cursor({"a": their_conv, "p": ""}),
        _cursor({"a": "01a00000-0000-7000-8000-000000000000", "p": ""}),
        _cursor({"a": run.bob.public_id, "p": ""}),
    ):
        # When a member sends it, then it is refused and nothing of any room is answered
        r = export(api, run.bob, room.url, bad)
        assert code(r) == (400, "parameter_invalid"), (bad, r.text)
        assert "launch date" not in r.text
        assert not any(c in r.text for c in mine)
    # And the untouched cursor still works
    assert lines(export(api, run.bob, room.url, cursor))


def test_a_cursor_of_one_room_does_not_open_another(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given Ada's two rooms, each with a conversation note
    ada = api.account()
    rooms = []
    for name in ("north", "south"):
        ws = api.workspace(ada, name)
        conv = api.conversation(ada, ws)
        for n in range(3):
            memory(api.write(ada, conv_base(ws, conv), f"conversation/{name}-{n}.md", f"{name} note {n}"))
        rooms.append((ws, conv))
    (north, _), (south, _) = rooms
    monkeypatch.setattr("agent_memory.render.export.EXPORT_PAGE_DOCUMENTS", 1)
    cursor = export(api, ada, room_export_url(north)).headers["Export-Next-Cursor"]
    # When the north room's cursor is sent to the south room's export
    r = export(api, ada, room_export_url(south), cursor)
    # Then it is refused, and nothing of the north room leaks into the south's export
    assert code(r) == (400, "parameter_invalid")
    assert "north" not in r.text


# ---- a person's own export ------------------------------------------------------------------------------


def test_the_profile_export_is_the_callers_own_user_rows_masked(room: Room) -> None:
    run = room.run
    api = run.api
    # Given Ada's user/ notes (one already written with the room) and one of Bob's
    memory(api.write(run.ada, PROFILE, "user/cards.md", PII_SAMPLES["card"] + "\n" + PII_SAMPLES["phone"]))
    memory(api.write(run.bob, PROFILE, "user/bob.md", "Bob's own. " + PII_SAMPLES["iban"]))
    # When Ada exports her own memory
    r = export(api, run.ada, PROFILE_EXPORT)
    rows = lines(r)
    # Then it holds her user/ rows only, masked: none of the room's documents, none of Bob's
    assert [(line["anchor"], line["path"]) for line in rows] == [
        ({"scope": "user", "public_id": run.ada.public_id}, "user/cards.md"),
        ({"scope": "user", "public_id": run.ada.public_id}, "user/private.md"),
    ]
    assert rows[0]["content"] == MASKED["card"] + "\n" + MASKED["phone"]
    assert rows[1]["content"] == "My own note. " + MASKED["email"]
    assert rows[0]["pii"] == ["card", "phone"]
    assert_masked(r.text)
    assert "Ship on" not in r.text and "Bob's own" not in r.text
    # And Bob's is his alone
    bobs = lines(export(api, run.bob, PROFILE_EXPORT))
    assert [(line["path"], line["content"]) for line in bobs] == [("user/bob.md", "Bob's own. " + MASKED["iban"])]
    # An agent's own export is its agent/ rows
    agents = lines(export(api, run.alpha, PROFILE_EXPORT))
    assert [(line["anchor"]["scope"], line["path"]) for line in agents] == [("agent", "agent/style.md")]


def test_the_profile_export_pages_and_refuses_a_cursor_that_is_not_its_own(
    room: Room, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = room.run
    api = run.api
    for n in range(4):
        memory(api.write(run.ada, PROFILE, f"user/n{n}.md", f"note {n} " + PII_SAMPLES["email"]))
    whole = lines(export(api, run.ada, PROFILE_EXPORT))
    assert len(whole) == 5
    # When the pages hold two documents each, then the cursor walks all five once
    monkeypatch.setattr("agent_memory.render.export.EXPORT_PAGE_DOCUMENTS", 2)
    rows, pages = walk(api, run.ada, PROFILE_EXPORT)
    assert rows == whole
    assert len(pages) == 3
    # And Ada's cursor is refused on Bob's export, as are a room's and a broken one
    cursor = pages[0].headers["Export-Next-Cursor"]
    room_cursor = export(api, run.ada, room.url).headers["Export-Next-Cursor"]
    for who, bad in ((run.bob, cursor), (run.ada, room_cursor), (run.ada, "%%%")):
        assert code(export(api, who, PROFILE_EXPORT, bad)) == (400, "parameter_invalid")
