"""Rollback over HTTP (issue 11): an earlier version restored as a new one, under the rules of any write.

History is never rewritten: a rollback adds a version whose bytes are the chosen version's, pointing at
the very same immutable S3 object (no bytes move). It needs the current pair, standing to write the
document's source, a read_write binding and a live conversation, and it bumps the conversation's
context_revision as any write through the conversation's door does.
"""

from __future__ import annotations

from typing import Any

from ..support import CONV, WORKSPACE, Api, Who, bindings, code, conv_base, created, pair
from .histories import (
    PROFILE,
    author,
    current,
    definition_base,
    doc_content_key,
    history,
    numbers,
    objects,
    redact,
    rollback,
    sha,
    shown_version,
    version_content_key,
)
from .world import World, make_world

TEXTS = ["ship friday\n  (maybe)  \n", "ship monday — 🚀\n", "ship never\n"]


def _three(w: World, base: str | None = None, path: str = "conversation/plan.md") -> tuple[str, int]:
    """A document whose versions 0, 1, 2 hold TEXTS."""
    doc = created(w.api.write(w.ada, base or w.base, path, TEXTS[0]))
    for text in TEXTS[1:]:
        doc = created(w.api.write(w.ada, base or w.base, path, text, doc))
    return doc


def _state(w: World, who: Who, base: str, path: str) -> tuple[Any, ...]:
    """What a refused rollback must leave alone: the history, the document, the bucket, the revision."""
    return history(w.api, who, base, path), current(w.api, who, base, path), objects(), w.revision()


def test_a_rollback_restores_the_chosen_bytes_as_a_new_version_of_the_same_object(api: Api) -> None:
    w = make_world(api)
    doc = _three(w)
    revision = w.revision()
    stored = objects()
    # When Ada rolls the document back to version 0 under its current pair
    r = rollback(api, w.ada, w.base, "conversation/plan.md", 0, doc)
    # Then the answer is the document in the show shape: a new version with version 0's bytes
    assert r.status_code == 201, r.text
    m = r.json()["memory"]
    assert (m["public_id"], m["lock_version"]) == (doc[0], 3)
    assert m["content"] == TEXTS[0]
    assert m["content_sha256"] == sha(TEXTS[0]) and m["bytesize"] == len(TEXTS[0].encode())
    assert m["written_by"] == author(w.ada, "ada")
    # And the document reads so from S3, and the history grew by one rollback version
    assert current(api, w.ada, w.base, "conversation/plan.md")["content"] == TEXTS[0]
    rows = history(api, w.ada, w.base, "conversation/plan.md")
    assert numbers(rows) == [3, 2, 1, 0]
    assert (rows[0]["operation"], rows[0]["rolled_back_from"]) == ("rollback", 0)
    assert rows[0]["content_sha256"] == rows[3]["content_sha256"]
    assert all(v["rolled_back_from"] is None for v in rows[1:])
    assert shown_version(api, w.ada, w.base, "conversation/plan.md", 3)["content"] == TEXTS[0]
    # And the versions it passed over are still there, unchanged
    assert [shown_version(api, w.ada, w.base, "conversation/plan.md", n)["content"] for n in range(3)] == TEXTS
    # And no byte moved: the bucket holds the same objects, and the new version names version 0's object
    assert objects() == stored
    assert doc_content_key("plan.md") == version_content_key("plan.md", 3) == version_content_key("plan.md", 0)
    # And the conversation's next reply sees the change
    assert w.revision() == revision + 1


def test_a_rollback_works_on_every_door(api: Api) -> None:
    # Given documents behind the workspace's, the profile's and a definition's doors
    w = make_world(api)
    assert api.post("/agents", w.ada, {"agent": {"name": "desk", "kind": "definition"}}).status_code == 201
    bot = api.agent(w.ada, "bot")
    cases = [
        (w.ada, w.ws_base, "workspace/plan.md"),
        (w.ada, PROFILE, "user/plan.md"),
        (w.ada, definition_base("desk"), "agent/plan.md"),
        (bot, PROFILE, "agent/plan.md"),
    ]
    revision = w.revision()
    for who, base, path in cases:
        doc = created(api.write(who, base, path, "first"))
        doc = created(api.write(who, base, path, "second", doc))
        # When each is rolled back through its door, Then it reads its first text as version 2
        r = rollback(api, who, base, path, 0, doc)
        assert r.status_code == 201, (base, path, r.text)
        assert (r.json()["memory"]["lock_version"], r.json()["memory"]["content"]) == (2, "first")
        top = history(api, who, base, path)[0]
        assert (top["operation"], top["rolled_back_from"], top["author"]["public_id"]) == (
            "rollback",
            0,
            who.public_id,
        )
    # And none of those doors moves the conversation's revision
    assert w.revision() == revision


def test_a_rollback_of_a_skill_restores_its_description_too(api: Api) -> None:
    w = make_world(api)
    skill = created(api.write(w.ada, w.ws_base, "workspace/skills/pdf-forms", "# v0", description="Fill forms"))
    skill = created(api.write(w.ada, w.ws_base, "workspace/skills/pdf-forms", "# v1", skill, description="Newer"))
    r = rollback(api, w.ada, w.ws_base, "workspace/skills/pdf-forms", 0, skill)
    assert r.status_code == 201, r.text
    assert (r.json()["memory"]["content"], r.json()["memory"]["description"]) == ("# v0", "Fill forms")
    assert current(api, w.ada, w.ws_base, "workspace/skills/pdf-forms")["description"] == "Fill forms"


def test_a_stale_or_missing_pair_is_refused_and_nothing_changes(api: Api) -> None:
    w = make_world(api)
    doc = _three(w)
    before = _state(w, w.ada, w.base, "conversation/plan.md")
    other = "01990000-0000-7000-8000-0000000000ff"
    # An older version of the document, another public_id, a version it has not reached
    for stale in ((doc[0], 1), (doc[0], 0), (other, 2), (doc[0], 3)):
        assert code(rollback(api, w.ada, w.base, "conversation/plan.md", 0, stale)) == (409, "stale_object"), stale
    # null/null (rollback never creates), or one half of the pair
    assert code(rollback(api, w.ada, w.base, "conversation/plan.md", 0, (None, None))) == (400, "parameter_invalid")
    assert code(rollback(api, w.ada, w.base, "conversation/plan.md", 0, (doc[0], None))) == (400, "parameter_invalid")
    assert code(rollback(api, w.ada, w.base, "conversation/plan.md", 0, (None, 2))) == (400, "parameter_invalid")
    # And nothing changed: not the history, the text, the bucket nor the revision
    assert _state(w, w.ada, w.base, "conversation/plan.md") == before


def test_a_bad_version_number_or_path_is_refused_and_nothing_changes(api: Api) -> None:
    w = make_world(api)
    doc = _three(w)
    before = _state(w, w.ada, w.base, "conversation/plan.md")
    # A version the document never had
    assert code(rollback(api, w.ada, w.base, "conversation/plan.md", 3, doc)) == (404, "memory_version_not_found")
    assert code(rollback(api, w.ada, w.base, "conversation/plan.md", 99, doc)) == (404, "memory_version_not_found")
    # Not a whole number of at least 0, or none at all
    for bad in (-1, 1.5, "0", True, None):
        assert code(rollback(api, w.ada, w.base, "conversation/plan.md", bad, doc)) == (400, "parameter_invalid"), bad
    body = {"path": "conversation/plan.md", "expected_public_id": doc[0], "expected_lock_version": doc[1]}
    assert code(api.post(f"{w.base}/rollback", w.ada, {"memory": body})) == (400, "parameter_missing")
    # An unknown document
    assert code(rollback(api, w.ada, w.base, "conversation/nothing.md", 0, doc)) == (404, "memory_not_found")
    assert _state(w, w.ada, w.base, "conversation/plan.md") == before


def test_a_rollback_through_a_read_binding_is_read_only(api: Api) -> None:
    # Given a room document, and a conversation that binds the room read-only
    w = make_world(api)
    doc = _three(w, w.ws_base, "workspace/plan.md")
    assert w.configure(bindings(CONV, {**WORKSPACE, "access": "read"})).status_code == 200
    before = _state(w, w.ada, w.ws_base, "workspace/plan.md")
    # When Ada rolls it back through that conversation, Then it is memory_read_only and nothing changed
    r = rollback(api, w.ada, w.base, "workspace/plan.md", 0, doc)
    assert code(r) == (403, "memory_read_only")
    assert _state(w, w.ada, w.ws_base, "workspace/plan.md") == before
    # While the workspace's own door still lets her
    assert rollback(api, w.ada, w.ws_base, "workspace/plan.md", 0, doc).status_code == 201


def test_a_viewer_cannot_roll_back_as_they_cannot_write(api: Api) -> None:
    w = make_world(api)
    vic = api.human(w.ada, "vic")
    api.member(w.ada, w.ws, vic, role="viewer")
    conv_doc = _three(w)
    ws_doc = _three(w, w.ws_base, "workspace/plan.md")
    before = (_state(w, w.ada, w.base, "conversation/plan.md"), _state(w, w.ada, w.ws_base, "workspace/plan.md"))
    for base, path, doc in ((w.base, "conversation/plan.md", conv_doc), (w.ws_base, "workspace/plan.md", ws_doc)):
        refused = code(api.write(vic, base, path, "x", doc))
        assert refused == (403, "not_authorized")
        assert code(rollback(api, vic, base, path, 0, doc)) == refused
    assert (
        _state(w, w.ada, w.base, "conversation/plan.md"),
        _state(w, w.ada, w.ws_base, "workspace/plan.md"),
    ) == before


def test_an_archived_conversation_refuses_a_rollback(api: Api) -> None:
    w = make_world(api)
    doc = _three(w)
    assert api.post(f"/workspaces/{w.ws}/conversations/{w.conv}/archive", w.ada).status_code == 200
    before = _state(w, w.ada, w.base, "conversation/plan.md")
    assert code(rollback(api, w.ada, w.base, "conversation/plan.md", 0, doc)) == (409, "conversation_archived")
    assert _state(w, w.ada, w.base, "conversation/plan.md") == before


def test_a_rollback_to_a_redacted_version_is_refused(api: Api) -> None:
    w = make_world(api)
    doc = _three(w)
    assert redact(api, w.ada, w.base, "conversation/plan.md", 0, doc).status_code == 200
    before = _state(w, w.ada, w.base, "conversation/plan.md")
    assert code(rollback(api, w.ada, w.base, "conversation/plan.md", 0, doc)) == (409, "memory_version_redacted")
    assert _state(w, w.ada, w.base, "conversation/plan.md") == before
    # And the versions not redacted still roll back
    assert rollback(api, w.ada, w.base, "conversation/plan.md", 1, doc).json()["memory"]["content"] == TEXTS[1]


def test_a_rollback_honours_expected_context_revision(api: Api) -> None:
    w = make_world(api)
    doc = _three(w)
    revision = w.revision()
    stale = rollback(api, w.ada, w.base, "conversation/plan.md", 0, doc, expected_context_revision=revision - 1)
    assert code(stale) == (409, "stale_object")
    assert w.revision() == revision
    ok = rollback(api, w.ada, w.base, "conversation/plan.md", 0, doc, expected_context_revision=revision)
    assert ok.status_code == 201, ok.text
    assert w.revision() == revision + 1
    assert pair(ok) == (doc[0], 3)


def test_a_rollback_through_the_conversation_door_of_another_conversation_is_not_found(api: Api) -> None:
    # A conversation's rows are its own: another conversation of the room has no such document
    w = make_world(api)
    doc = _three(w)
    other = api.conversation(w.ada, w.ws)
    assert code(rollback(api, w.ada, conv_base(w.ws, other), "conversation/plan.md", 0, doc)) == (
        404,
        "memory_not_found",
    )
    assert numbers(history(api, w.ada, w.base, "conversation/plan.md")) == [2, 1, 0]
