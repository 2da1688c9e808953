"""A document's history over HTTP (issue 11): the versions listing and one version's text, on every door.

Every accepted write, edit, rollback and promote records a version named by its lock_version, with its
author (a person by name, an agent by its own identity, a model's tool call by its run too), its
operation, its size and the SHA-256 of its bytes. The listing walks them newest first, a page at a time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_memory.api.contract import READ_ONLY_TOOLS

from ..support import CONV, WORKSPACE, Api, Who, bindings, code, conv_base, created, pair, ws_base
from .five_scopes import make_five
from .histories import (
    PROFILE,
    author,
    definition_base,
    history,
    numbers,
    promote,
    rollback,
    sha,
    shown_version,
    version_show,
    versions,
)
from .runs import Run, create, make_run

ROOT = Path(__file__).resolve().parents[2]
B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
VERSION_KEYS = {
    "path",
    "public_id",
    "lock_version",
    "bytesize",
    "content_sha256",
    "description",
    "written_at",
    "author",
    "operation",
    "overwrote_concurrent_edit",
    "rolled_back_from",
    "renamed_from",
    "promoted_from",
    "promoted_by",
    "forked_from",
    "merged_from",
    "redacted",
    "redacted_at",
    "redacted_by",
    "pii",
    "quarantine",
}


@pytest.fixture
def run(api: Api) -> Run:
    return make_run(api)


# ---- the history of a document -----------------------------------------------------------------------


def test_a_history_through_mixed_doors_and_tools_names_every_version_its_author_and_operation(run: Run) -> None:
    api, ada, bob, alpha = run.api, run.ada, run.bob, run.alpha
    path = "workspace/plan.md"
    texts = ["ship friday\n", "ship monday\n", "ship tuesday\n", "ship — wednesday 🚀\n"]
    # Given a room document written by Ada through the conversation's door,
    doc = created(api.write(ada, run.base, path, texts[0]))
    # edited by Bob through the workspace's door,
    edited = api.edit(bob, run.ws_base, path, "friday", "monday", doc)
    assert edited.status_code == 200, edited.text
    # edited by the answering agent's model through a tool call of its run,
    ex = run.execution()
    tool = run.ok(ex, "memory_edit", path=path, old_text="monday", new_text="tuesday", **_expected(pair(edited)))
    # replaced by Ada on purpose over the agent's version (she saw it and keeps her own),
    over = api.write(ada, run.ws_base, path, texts[3], _pair(tool["data"]), conflict_resolution="overwrite")
    # rolled back by Bob to his version, and promoted over by Ada from a conversation note
    back = rollback(api, bob, run.ws_base, path, 1, pair(over))
    assert back.status_code == 201, back.text
    note = created(api.write(ada, run.base, "conversation/note.md", "from the chat\n"))
    promoted = promote(
        api,
        ada,
        run.ws,
        {"conversation_public_id": run.conv, "path": "conversation/note.md", "lock_version": 0},
        path,
        pair(back),
    )
    assert promoted.status_code == 201, promoted.text

    # When anyone in the room lists the document's versions
    rows = history(api, run.vic, run.ws_base, path)

    # Then they are every version, newest first, under the document's one public_id
    assert numbers(rows) == [5, 4, 3, 2, 1, 0]
    assert {v["public_id"] for v in rows} == {doc[0]}
    assert all(set(v) == VERSION_KEYS and v["path"] == path for v in rows)
    by = {v["lock_version"]: v for v in rows}
    # And each names how it was made
    assert [by[n]["operation"] for n in range(6)] == ["write", "edit", "edit", "write", "rollback", "promote"]
    assert by[4]["rolled_back_from"] == 1
    assert by[5]["promoted_from"] == {
        "anchor_public_id": run.conv,
        "path": "conversation/note.md",
        "public_id": note[0],
        "lock_version": 0,
    }
    # And who: a person by name, the agent by its own identity (not its steward's), and the tool's version
    # also by the run that wrote it; versions made through a door name no run
    assert by[0]["author"] == by[3]["author"] == by[5]["author"] == author(ada, "ada")
    assert by[1]["author"] == by[4]["author"] == author(bob, "bob")
    assert by[2]["author"] == {**author(alpha, "alpha"), "execution_public_id": ex["public_id"]}
    assert [n for n in range(6) if "execution_public_id" in by[n]["author"]] == [2]
    # And the hash and size of exactly the bytes each version holds
    expected_texts = [texts[0], texts[1], texts[2], texts[3], texts[1], "from the chat\n"]
    for n, text in enumerate(expected_texts):
        assert by[n]["content_sha256"] == sha(text)
        assert by[n]["bytesize"] == len(text.encode("utf-8"))
        assert shown_version(api, run.vic, run.ws_base, path, n)["content"] == text
    # And only the write that said so overwrote a concurrent edit
    assert [n for n in range(6) if by[n]["overwrote_concurrent_edit"]] == [3]
    assert all(by[n]["redacted"] is False and by[n]["redacted_at"] is None for n in range(6))


def test_the_listing_and_show_name_the_latest_author_and_the_content_hash(run: Run) -> None:
    api = run.api
    # Given a document Ada wrote and the agent's model then rewrote
    doc = created(api.write(run.ada, run.base, "conversation/plan.md", "mine"))
    ex = run.execution()
    run.ok(ex, "memory_write", path="conversation/plan.md", content="the agent's", **_expected(doc))
    # When the room lists and shows it, through either door that serves it
    rows = [m for m in run.listing() if m["path"] == "conversation/plan.md"]
    shown = api.show(run.vic, run.base, "conversation/plan.md").json()["memory"]
    # Then both name the latest version's author, with its run, and the hash of its bytes
    agent = {**author(run.alpha, "alpha"), "execution_public_id": ex["public_id"]}
    assert rows[0]["written_by"] == shown["written_by"] == agent
    assert rows[0]["content_sha256"] == shown["content_sha256"] == sha("the agent's")
    # And every field the listing always had is still there
    assert {"path", "public_id", "lock_version", "bytesize", "description", "written_at"} <= set(rows[0])
    assert shown["content"] == "the agent's"
    # And after a person writes again through a door, no run is named
    created(api.write(run.bob, run.ws_base, "workspace/room.md", "hello"))
    room = api.show(run.ada, run.ws_base, "workspace/room.md").json()["memory"]
    assert room["written_by"] == author(run.bob, "bob")


def test_the_profile_and_definition_doors_record_their_principals(api: Api) -> None:
    # Given Ada's own notes, a named definition she stewards, and a paired program of hers, the two agents
    # each answering a conversation of her room
    ada = api.account()
    ws = api.workspace(ada)
    r = api.post("/agents", ada, {"agent": {"name": "support-bot", "kind": "definition"}})
    assert r.status_code == 201, r.text
    desk = api.conversation(ada, ws, answering_agent_public_id=r.json()["agent"]["public_id"])
    bot = api.agent(ada, "bot")
    api.member(ada, ws, bot)
    chat = api.conversation(ada, ws, answering_agent_public_id=bot.public_id)
    door = definition_base("support-bot")
    # When each writes and edits through its own door, and then through a conversation's
    mine = created(api.write(ada, PROFILE, "user/prefs.md", "tea"))
    assert api.edit(ada, PROFILE, "user/prefs.md", "tea", "coffee", mine).status_code == 200
    tone = created(api.write(ada, door, "agent/tone.md", "friendly"))
    tone = pair(api.edit(ada, door, "agent/tone.md", "friendly", "warm", tone))
    assert api.edit(ada, conv_base(ws, desk), "agent/tone.md", "warm", "kind", tone).status_code == 200
    notes = created(api.write(bot, PROFILE, "agent/notes.md", "milk"))
    notes = created(api.write(bot, PROFILE, "agent/notes.md", "eggs", notes))
    ex = api.post(f"/workspaces/{ws}/conversations/{chat}/executions", bot, {"execution": {}})
    assert ex.status_code == 201, ex.text
    run_id = ex.json()["execution"]["public_id"]
    edit = {"path": "agent/notes.md", "old_text": "eggs", "new_text": "bread", **_expected(notes)}
    called = api.post(f"/executions/{run_id}/tools/memory_edit", bot, {"input": edit})
    assert called.status_code == 200 and called.json()["is_error"] is False, called.text
    # Then each door lists its document's versions with the principal whose token made them: the steward
    # for the definition she writes, the program itself (never its steward) for its own notes, its run too
    prefs = history(api, ada, PROFILE, "user/prefs.md")
    assert [(v["lock_version"], v["operation"], v["author"]) for v in prefs] == [
        (1, "edit", author(ada, "ada")),
        (0, "write", author(ada, "ada")),
    ]
    assert [(v["operation"], v["author"]) for v in history(api, ada, door, "agent/tone.md")] == [
        ("edit", author(ada, "ada")),
        ("edit", author(ada, "ada")),
        ("write", author(ada, "ada")),
    ]
    own = history(api, bot, PROFILE, "agent/notes.md")
    assert [(v["lock_version"], v["operation"], v["author"]) for v in own] == [
        (2, "edit", {**author(bot, "bot"), "execution_public_id": run_id}),
        (1, "write", author(bot, "bot")),
        (0, "write", author(bot, "bot")),
    ]
    # And the conversations the agents answer show the very same histories
    assert history(api, bot, conv_base(ws, chat), "agent/notes.md") == own
    assert history(api, ada, conv_base(ws, desk), "agent/tone.md") == history(api, ada, door, "agent/tone.md")
    assert shown_version(api, bot, PROFILE, "agent/notes.md", 0)["content"] == "milk"
    assert shown_version(api, ada, door, "agent/tone.md", 0)["content"] == "friendly"
    # And each door serves only its own rows' histories
    assert code(versions(api, ada, PROFILE, "agent/tone.md")) == (422, "memory_scope_unavailable")
    assert code(versions(api, bot, PROFILE, "user/prefs.md")) == (422, "memory_scope_unavailable")


def test_every_scope_keeps_a_history(api: Api) -> None:
    # Given one caller reaching all five scopes through one conversation
    five = make_five(api)
    paths = [f"{scope}/notes.md" for scope in ("conversation", "workspace", "user", "agent", "speaker")]
    # When she writes and edits a document in each
    for path in paths:
        doc = created(api.write(five.ada, five.base, path, f"{path} v0"))
        assert api.edit(five.ada, five.base, path, "v0", "v1", doc).status_code == 200
    # Then each has its own history of two versions, with each version's text
    for path in paths:
        rows = history(api, five.ada, five.base, path)
        assert [(v["lock_version"], v["operation"]) for v in rows] == [(1, "edit"), (0, "write")], path
        assert len({v["public_id"] for v in rows}) == 1
        assert shown_version(api, five.ada, five.base, path, 0)["content"] == f"{path} v0"
        assert shown_version(api, five.ada, five.base, path, 1)["content"] == f"{path} v1"
    # And the scopes' own doors show the same histories
    assert history(api, five.ada, ws_base(five.ws), "workspace/notes.md") == history(
        api, five.ada, five.base, "workspace/notes.md"
    )
    assert history(api, five.ada, PROFILE, "user/notes.md") == history(api, five.ada, five.base, "user/notes.md")


def test_conflict_resolution_is_overwrite_or_nothing(run: Run) -> None:
    api = run.api
    doc = created(api.write(run.ada, run.base, "conversation/plan.md", "v0"))
    before = history(api, run.ada, run.base, "conversation/plan.md")
    revision = run.revision()
    # When a write names any other conflict resolution
    for bad in ("force", "", "OVERWRITE", 1, True, ["overwrite"]):
        r = api.write(run.ada, run.base, "conversation/plan.md", "v1", doc, conflict_resolution=bad)
        # Then it is refused as invalid and nothing was written
        assert code(r) == (400, "parameter_invalid"), bad
    assert history(api, run.ada, run.base, "conversation/plan.md") == before
    assert api.show(run.ada, run.base, "conversation/plan.md").json()["memory"]["content"] == "v0"
    assert run.revision() == revision
    # And null is the same as leaving it out: an ordinary write, recorded as no overwrite
    assert api.write(run.ada, run.base, "conversation/plan.md", "v1", doc, conflict_resolution=None).status_code == 201
    assert history(api, run.ada, run.base, "conversation/plan.md")[0]["overwrote_concurrent_edit"] is False
    # And "overwrite" still needs the current pair: it only records the intent
    stale = api.write(run.ada, run.base, "conversation/plan.md", "v2", doc, conflict_resolution="overwrite")
    assert code(stale) == (409, "stale_object")
    assert numbers(history(api, run.ada, run.base, "conversation/plan.md")) == [1, 0]


# ---- the listing: pages, bounds, standing ------------------------------------------------------------


def _document_with(api: Api, who: Who, base: str, path: str, n: int) -> tuple[str, int]:
    """A document with versions 0..n-1, version i holding "v{i}"."""
    doc = created(api.write(who, base, path, "v0"))
    for i in range(1, n):
        doc = created(api.write(who, base, path, f"v{i}", doc))
    return doc


def test_the_listing_shows_twenty_by_default_and_up_to_a_hundred(run: Run) -> None:
    api = run.api
    _document_with(api, run.ada, run.ws_base, "workspace/long.md", 22)
    # When the listing is asked without a limit, Then it shows the newest twenty and a cursor
    first = versions(api, run.ada, run.ws_base, "workspace/long.md")
    assert first.status_code == 200, first.text
    assert numbers(first.json()["versions"]) == list(range(21, 1, -1))
    assert first.json()["next_cursor"] is not None
    # And the cursor's page is the rest, with no further cursor
    rest = versions(api, run.ada, run.ws_base, "workspace/long.md", cursor=first.json()["next_cursor"])
    assert numbers(rest.json()["versions"]) == [1, 0] and rest.json()["next_cursor"] is None
    # And the bounds are 1 and 100
    assert numbers(versions(api, run.ada, run.ws_base, "workspace/long.md", limit=1).json()["versions"]) == [21]
    whole = versions(api, run.ada, run.ws_base, "workspace/long.md", limit=100).json()
    assert numbers(whole["versions"]) == list(range(21, -1, -1)) and whole["next_cursor"] is None
    # And a limit exactly the number of versions needs no second page
    exact = versions(api, run.ada, run.ws_base, "workspace/long.md", limit=22).json()
    assert len(exact["versions"]) == 22 and exact["next_cursor"] is None


def test_a_limit_out_of_bounds_or_not_a_whole_number_is_refused(run: Run) -> None:
    api = run.api
    _document_with(api, run.ada, run.base, "conversation/plan.md", 2)
    for bad in (0, 101, "3", True, -1, 2.5, None, [3]):
        assert code(versions(api, run.ada, run.base, "conversation/plan.md", limit=bad)) == (
            400,
            "parameter_invalid",
        ), bad
    assert numbers(history(api, run.ada, run.base, "conversation/plan.md")) == [1, 0]


def test_the_cursor_walks_every_version_exactly_once(run: Run) -> None:
    api = run.api
    _document_with(api, run.ada, run.base, "conversation/plan.md", 8)
    for limit in (1, 3, 4, 7):
        seen: list[int] = []
        pages = 0
        cursor = None
        while True:
            body: dict[str, Any] = {"limit": limit} if cursor is None else {"limit": limit, "cursor": cursor}
            r = versions(api, run.ada, run.base, "conversation/plan.md", **body)
            assert r.status_code == 200, r.text
            page = r.json()
            assert 0 < len(page["versions"]) <= limit
            seen += numbers(page["versions"])
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == list(range(7, -1, -1)), limit
        assert pages == -(-8 // limit)


def test_a_tampered_or_foreign_cursor_is_refused(run: Run) -> None:
    api = run.api
    _document_with(api, run.ada, run.base, "conversation/plan.md", 3)
    _document_with(api, run.ada, run.base, "conversation/other.md", 3)
    cursor = versions(api, run.ada, run.base, "conversation/plan.md", limit=1).json()["next_cursor"]
    foreign = versions(api, run.ada, run.base, "conversation/other.md", limit=1).json()["next_cursor"]
    assert isinstance(cursor, str) and isinstance(foreign, str)
    middle = len(cursor) // 2

    def flip(c: str) -> str:
        """The base64url character one bit away: at the very end, a bit the decoder may discard as padding."""
        return B64URL[B64URL.index(c) ^ 1]

    tampered = [
        # one character edited: at the start, in the middle, at the very end; one character more or fewer
        flip(cursor[0]) + cursor[1:],
        cursor[:middle] + flip(cursor[middle]) + cursor[middle + 1 :],
        cursor[:-1] + flip(cursor[-1]),
        cursor + "=",
        cursor + "A",
        cursor[:-1],
        # garbage, and what is not a string at all
        "not a cursor",
        "",
        "x" * 500,
        "é",
        # another document's cursor
        foreign,
    ]
    for bad in [*tampered, 3, True, {"cursor": cursor}]:
        r = versions(api, run.ada, run.base, "conversation/plan.md", limit=1, cursor=bad)
        assert code(r) == (400, "parameter_invalid"), bad
    # And the untouched cursor still answers the next page
    ok = versions(api, run.ada, run.base, "conversation/plan.md", limit=1, cursor=cursor)
    assert numbers(ok.json()["versions"]) == [1]


def test_the_listing_refuses_a_bad_path_and_follows_read_standing_like_show(run: Run) -> None:
    api = run.api
    _document_with(api, run.ada, run.base, "workspace/plan.md", 2)
    # An unknown path, a bad one, none at all
    assert code(versions(api, run.ada, run.base, "workspace/nothing.md")) == (404, "memory_not_found")
    assert code(versions(api, run.ada, run.ws_base, "workspace/nothing.md")) == (404, "memory_not_found")
    assert code(versions(api, run.ada, run.base, "nowhere/plan.md")) == (422, "memory_path_invalid")
    assert code(api.post(f"{run.base}/versions", run.ada, {"memory": {}})) == (400, "parameter_missing")
    assert code(api.post(f"{run.base}/versions", run.ada, {})) == (400, "parameter_missing")
    # A viewer of the room reads the history, through either door
    assert numbers(history(api, run.vic, run.base, "workspace/plan.md")) == [1, 0]
    assert numbers(history(api, run.vic, run.ws_base, "workspace/plan.md")) == [1, 0]
    # A stranger gets exactly the refusal show gives them
    eve = api.account("other", "eve")
    ozzy = api.human(run.ada, "ozzy")
    for who in (eve, ozzy):
        for base in (run.base, run.ws_base):
            refused = code(api.show(who, base, "workspace/plan.md"))
            assert refused == (404, "not_found")
            assert code(versions(api, who, base, "workspace/plan.md")) == refused
            assert code(version_show(api, who, base, "workspace/plan.md", 0)) == refused
    assert code(versions(api, None, run.base, "workspace/plan.md")) == (401, "not_authenticated")


# ---- one version -------------------------------------------------------------------------------------


def test_an_old_version_reads_back_byte_for_byte(run: Run) -> None:
    api = run.api
    texts = ["  leading and trailing  \n\n", "é 𝄞 \u200b tabs\tand\r\nCRLF", "# new\n"]
    doc = created(api.write(run.ada, run.base, "conversation/plan.md", texts[0]))
    doc = created(api.write(run.ada, run.base, "conversation/plan.md", texts[1], doc))
    created(api.write(run.ada, run.base, "conversation/plan.md", texts[2], doc))
    for n, text in enumerate(texts):
        v = shown_version(api, run.vic, run.base, "conversation/plan.md", n)
        assert set(v) == VERSION_KEYS | {"content"}
        assert v["content"] == text
        assert v["content_sha256"] == sha(text)
        assert v["bytesize"] == len(text.encode("utf-8"))
        assert v["lock_version"] == n and v["public_id"] == doc[0]
    # And the version's record is the listing's, plus its content
    listed = {v["lock_version"]: v for v in history(api, run.ada, run.base, "conversation/plan.md")}
    v0 = shown_version(api, run.ada, run.base, "conversation/plan.md", 0)
    assert {k: x for k, x in v0.items() if k != "content"} == listed[0]


def test_an_unknown_or_malformed_version_number_is_refused(run: Run) -> None:
    api = run.api
    _document_with(api, run.ada, run.base, "conversation/plan.md", 2)
    before = history(api, run.ada, run.base, "conversation/plan.md")
    # A version the document never had
    for missing in (2, 99, 10**9):
        r = version_show(api, run.ada, run.base, "conversation/plan.md", missing)
        assert code(r) == (404, "memory_version_not_found"), missing
    # No version named at all
    r = api.post(f"{run.base}/versions/show", run.ada, {"memory": {"path": "conversation/plan.md"}})
    assert code(r) == (400, "parameter_missing")
    # Not a whole number of at least 0
    for bad in (-1, 1.5, 1.0, "1", True, None, [1], 10**20):
        assert code(version_show(api, run.ada, run.base, "conversation/plan.md", bad)) == (400, "parameter_invalid"), (
            bad
        )
    # An unknown path is the document's absence, not the version's
    assert code(version_show(api, run.ada, run.base, "conversation/nothing.md", 0)) == (404, "memory_not_found")
    # And nothing changed
    assert history(api, run.ada, run.base, "conversation/plan.md") == before


# ---- execution_public_id: which run wrote which version -----------------------------------------------


def test_each_tool_written_version_names_its_run(run: Run) -> None:
    # Given two runs of the agent writing one document, and a person's write between them
    first, second = run.execution(), run.execution()
    wrote = run.ok(first, "memory_write", **create("conversation/log.md", "first run"))
    person = created(run.api.write(run.ada, run.base, "conversation/log.md", "a person", _pair(wrote["data"])))
    run.ok(second, "memory_write", path="conversation/log.md", content="second run", **_expected(person))
    # Then each tool version names its own run, and the person's none
    rows = history(run.api, run.ada, run.base, "conversation/log.md")
    assert [v["author"].get("execution_public_id") for v in rows] == [second["public_id"], None, first["public_id"]]
    assert [v["author"]["public_id"] for v in rows] == [run.alpha.public_id, run.ada.public_id, run.alpha.public_id]
    # And a person's run names the person and the run
    bobs = run.execution(run.bob)
    run.ok(bobs, "memory_write", **create("workspace/bob.md", "by bob's run"))
    (v,) = history(run.api, run.ada, run.ws_base, "workspace/bob.md")
    assert v["author"] == {**author(run.bob, "bob"), "execution_public_id": bobs["public_id"]}


# ---- the memory_history tool -------------------------------------------------------------------------


def test_memory_history_is_offered_in_both_schema_formats_and_no_tool_changes_history(run: Run) -> None:
    for fmt in ("anthropic", "openai"):
        r = run.api.get("/tools/schemas", None, params={"format": fmt})
        assert r.status_code == 200, r.text
        tools = r.json()["tools"]
        by_name = {t["name"] if fmt == "anthropic" else t["function"]["name"]: t for t in tools}
        assert "memory_history" in by_name
        schema = by_name["memory_history"]["input_schema" if fmt == "anthropic" else "function"]
        if fmt == "openai":
            schema = schema["parameters"]
        assert {"path", "limit", "cursor"} <= set(schema["properties"])
        assert "path" in schema.get("required", [])
        # And no tool rolls back, redacts or promotes
        assert not [n for n in by_name if any(w in n for w in ("rollback", "redact", "promote"))]
        # And the served schemas are the committed ones
        assert r.json() == json.loads((ROOT / "docs" / f"tools.{fmt}.json").read_text())
    assert "memory_history" in READ_ONLY_TOOLS
    ex = run.execution()
    assert "memory_history" in ex["tools"]
    for verb in ("memory_rollback", "memory_redact", "memory_promote"):
        assert code(run.api.post(f"/executions/{ex['public_id']}/tools/{verb}", run.alpha, {"input": {}})) == (
            404,
            "not_found",
        )
        assert code(run.start(tools=[verb])) == (400, "parameter_invalid")


def test_memory_history_answers_the_listing_in_a_read_only_run(run: Run) -> None:
    api = run.api
    # Given a room document with three versions, and a run offered only the read-only tools
    # through a conversation that binds the room read-only
    _document_with(api, run.ada, run.ws_base, "workspace/plan.md", 3)
    run.configure(bindings(CONV, {**WORKSPACE, "access": "read"}))
    ex = run.execution(tools=sorted(READ_ONLY_TOOLS))
    assert "memory_history" in ex["tools"] and "memory_write" not in ex["tools"]
    revision = run.revision()
    # When the model asks for the history
    out = run.ok(ex, "memory_history", path="workspace/plan.md")
    # Then its data is the versions listing, and its text names each version for the model
    assert out["data"] == versions(api, run.ada, run.base, "workspace/plan.md").json()
    assert out["content"].startswith("workspace/plan.md: 3 versions, newest first.")
    for n in range(3):
        assert f"lock_version {n}: write by human ada" in out["content"]
    assert sha("v2")[:12] in out["content"]
    # And it pages like the listing, telling the model how to go on
    page = run.ok(ex, "memory_history", path="workspace/plan.md", limit=2)
    assert numbers(page["data"]["versions"]) == [2, 1]
    assert page["data"]["next_cursor"] in page["content"]
    rest = run.ok(ex, "memory_history", path="workspace/plan.md", limit=2, cursor=page["data"]["next_cursor"])
    assert numbers(rest["data"]["versions"]) == [0] and rest["data"]["next_cursor"] is None
    # And its refusals are the listing's
    assert run.refused(ex, "memory_history", path="workspace/nothing.md") == "memory_not_found"
    assert run.refused(ex, "memory_history", path="workspace/plan.md", cursor="nope") == "parameter_invalid"
    assert run.refused(ex, "memory_history", path="workspace/plan.md", limit=0) == "parameter_invalid"
    # And reading the history changed nothing
    assert run.revision() == revision
    assert numbers(history(api, run.ada, run.ws_base, "workspace/plan.md")) == [2, 1, 0]


# ---- helpers -----------------------------------------------------------------------------------------


def _pair(doc: dict[str, Any]) -> tuple[str, int]:
    return doc["public_id"], doc["lock_version"]


def _expected(p: tuple[str, int]) -> dict[str, Any]:
    return {"expected_public_id": p[0], "expected_lock_version": p[1]}
