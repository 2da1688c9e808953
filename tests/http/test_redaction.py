"""Redaction over HTTP (issue 11): an earlier version's bytes scrubbed, its record kept.

For a secret written by mistake: the object is deleted from S3 at once when nothing else holds it (the
bucket is checked, not only the API), and otherwise as soon as nothing does; the record (author, time,
hash) stays. The current version cannot be redacted, a stale pair is refused, a read binding is read-only,
and since a redaction adds no text it is allowed on an archived conversation and bumps nothing.
"""

from __future__ import annotations

from typing import Any

from ..support import CONV, WORKSPACE, Api, Who, bindings, code, conv_base, created, pair
from .histories import (
    PROFILE,
    author,
    current,
    history,
    numbers,
    objects,
    redact,
    rollback,
    run_sweep,
    sha,
    shown_version,
    version_content_key,
)
from .world import World, make_world

SECRET = "the launch code is 1234\n"


def _leaked(w: World, base: str | None = None, path: str = "conversation/plan.md") -> tuple[tuple[str, int], str]:
    """A document whose version 0 holds SECRET and version 1 a clean text; (its pair, version 0's key)."""
    doc = created(w.api.write(w.ada, base or w.base, path, SECRET))
    key = version_content_key(path.partition("/")[2], 0)
    assert key is not None
    doc = created(w.api.write(w.ada, base or w.base, path, "no secrets here\n", doc))
    return doc, key


def _state(w: World, who: Who, base: str, path: str) -> tuple[Any, ...]:
    """What a refused redaction must leave alone: the history, the document, the bucket, the revision."""
    return history(w.api, who, base, path), current(w.api, who, base, path), objects(), w.revision()


def test_a_redaction_deletes_the_bytes_at_once_and_keeps_the_record(api: Api) -> None:
    w = make_world(api)
    doc, key = _leaked(w)
    assert objects()[key] == SECRET
    before = shown_version(api, w.ada, w.base, "conversation/plan.md", 0)
    revision = w.revision()
    # When Ada redacts version 0 under the document's current pair
    r = redact(api, w.ada, w.base, "conversation/plan.md", 0, doc)
    # Then the answer is the record, redacted, without its text
    assert r.status_code == 200, r.text
    v = r.json()["version"]
    assert (v["redacted"], v["content"]) == (True, None)
    assert v["redacted_by"] == author(w.ada, "ada") and v["redacted_at"]
    # And the bytes are gone from the bucket already, with no sweep
    assert key not in objects()
    assert SECRET not in objects().values()
    # And versions/show answers the same: the record's hash, size, author and time kept, no content
    shown = shown_version(api, w.ada, w.base, "conversation/plan.md", 0)
    assert shown == v
    kept = ("lock_version", "public_id", "content_sha256", "bytesize", "author", "written_at", "operation")
    assert {k: shown[k] for k in kept} == {k: before[k] for k in kept}
    assert shown["content_sha256"] == sha(SECRET)
    # And the listing marks it, and the table's record no longer names an object
    rows = history(api, w.ada, w.base, "conversation/plan.md")
    assert [(x["lock_version"], x["redacted"]) for x in rows] == [(1, False), (0, True)]
    assert version_content_key("plan.md", 0) is None
    # And the document itself did not move: same pair, same text, no new version, no revision bump
    now = current(api, w.ada, w.base, "conversation/plan.md")
    assert ((now["public_id"], now["lock_version"]), now["content"]) == (doc, "no secrets here\n")
    assert w.revision() == revision
    # And redacting it again is no change at all
    again = redact(api, w.ada, w.base, "conversation/plan.md", 0, doc)
    assert again.status_code == 200 and again.json()["version"] == v


def test_the_current_version_cannot_be_redacted(api: Api) -> None:
    w = make_world(api)
    doc, _ = _leaked(w)
    before = _state(w, w.ada, w.base, "conversation/plan.md")
    r = redact(api, w.ada, w.base, "conversation/plan.md", 1, doc)
    assert code(r) == (409, "memory_version_current")
    assert _state(w, w.ada, w.base, "conversation/plan.md") == before
    # And after a write, the version that was current can be
    doc = created(api.write(w.ada, w.base, "conversation/plan.md", "v2", doc))
    assert redact(api, w.ada, w.base, "conversation/plan.md", 1, doc).status_code == 200


def test_a_stale_pair_or_unknown_version_is_refused_and_nothing_changes(api: Api) -> None:
    w = make_world(api)
    doc, key = _leaked(w)
    before = _state(w, w.ada, w.base, "conversation/plan.md")
    other = "01990000-0000-7000-8000-0000000000ff"
    for stale in ((doc[0], 0), (other, 1), (doc[0], 2)):
        assert code(redact(api, w.ada, w.base, "conversation/plan.md", 0, stale)) == (409, "stale_object"), stale
    assert code(redact(api, w.ada, w.base, "conversation/plan.md", 0, (None, None))) == (400, "parameter_invalid")
    assert code(redact(api, w.ada, w.base, "conversation/plan.md", 5, doc)) == (404, "memory_version_not_found")
    assert code(redact(api, w.ada, w.base, "conversation/plan.md", -1, doc)) == (400, "parameter_invalid")
    assert code(redact(api, w.ada, w.base, "conversation/plan.md", "0", doc)) == (400, "parameter_invalid")
    assert code(redact(api, w.ada, w.base, "conversation/nothing.md", 0, doc)) == (404, "memory_not_found")
    assert _state(w, w.ada, w.base, "conversation/plan.md") == before
    assert objects()[key] == SECRET


def test_a_redaction_through_a_read_binding_is_read_only_and_a_viewer_is_not_authorized(api: Api) -> None:
    w = make_world(api)
    vic = api.human(w.ada, "vic")
    api.member(w.ada, w.ws, vic, role="viewer")
    doc, key = _leaked(w, w.ws_base, "workspace/plan.md")
    assert w.configure(bindings(CONV, {**WORKSPACE, "access": "read"})).status_code == 200
    before = _state(w, w.ada, w.ws_base, "workspace/plan.md")
    # Through the conversation binding the room read-only
    assert code(redact(api, w.ada, w.base, "workspace/plan.md", 0, doc)) == (403, "memory_read_only")
    # A viewer, through the room's own door: refused as any write of theirs
    assert code(api.write(vic, w.ws_base, "workspace/plan.md", "x", doc)) == (403, "not_authorized")
    assert code(redact(api, vic, w.ws_base, "workspace/plan.md", 0, doc)) == (403, "not_authorized")
    assert _state(w, w.ada, w.ws_base, "workspace/plan.md") == before
    assert objects()[key] == SECRET
    # While the room's door lets its owner
    assert redact(api, w.ada, w.ws_base, "workspace/plan.md", 0, doc).status_code == 200
    assert key not in objects()


def test_a_redaction_is_allowed_on_an_archived_conversation_and_bumps_nothing(api: Api) -> None:
    w = make_world(api)
    doc, key = _leaked(w)
    assert api.post(f"/workspaces/{w.ws}/conversations/{w.conv}/archive", w.ada).status_code == 200
    revision = w.revision()
    # A write is refused there, a redaction is not: it removes text and adds none
    assert code(api.write(w.ada, w.base, "conversation/plan.md", "x", doc)) == (409, "conversation_archived")
    r = redact(api, w.ada, w.base, "conversation/plan.md", 0, doc)
    assert r.status_code == 200, r.text
    assert key not in objects()
    assert w.revision() == revision
    assert pair(api.show(w.ada, w.base, "conversation/plan.md")) == doc


def test_a_redaction_on_the_profile_door(api: Api) -> None:
    w = make_world(api)
    doc, key = _leaked(w, PROFILE, "user/plan.md")
    assert redact(api, w.ada, PROFILE, "user/plan.md", 0, doc).status_code == 200
    assert key not in objects()
    assert shown_version(api, w.ada, PROFILE, "user/plan.md", 0)["redacted"] is True


# ---- bytes another version or a fork still holds ------------------------------------------------------


def test_bytes_a_rollback_restored_stay_until_no_version_holds_them(api: Api) -> None:
    # Given version 0 with the secret, rolled back to as version 2 (the same object)
    w = make_world(api)
    doc, key = _leaked(w)
    doc = pair(rollback(api, w.ada, w.base, "conversation/plan.md", 0, doc))
    assert doc[1] == 2
    # When version 0 is redacted
    r = redact(api, w.ada, w.base, "conversation/plan.md", 0, doc)
    assert r.status_code == 200, r.text
    # Then its record has let go, but the object stays: the current version still points at it
    assert version_content_key("plan.md", 0) is None
    assert objects()[key] == SECRET
    assert current(api, w.ada, w.base, "conversation/plan.md")["content"] == SECRET
    assert shown_version(api, w.ada, w.base, "conversation/plan.md", 2)["content"] == SECRET
    assert shown_version(api, w.ada, w.base, "conversation/plan.md", 0)["content"] is None
    # And a sweep leaves it too
    run_sweep()
    assert objects()[key] == SECRET
    # When the document moves on and version 2 is redacted as well, Then nothing holds it and it goes at once
    doc = created(api.write(w.ada, w.base, "conversation/plan.md", "clean again\n", doc))
    assert redact(api, w.ada, w.base, "conversation/plan.md", 2, doc).status_code == 200
    assert key not in objects()
    assert [v["redacted"] for v in history(api, w.ada, w.base, "conversation/plan.md")] == [False, True, False, True]


def test_bytes_a_deleted_documents_last_version_held_go_with_the_next_sweep(api: Api) -> None:
    # Given a secret rolled back to, then redacted in its first version (the current version holds it)
    w = make_world(api)
    doc, key = _leaked(w)
    doc = pair(rollback(api, w.ada, w.base, "conversation/plan.md", 0, doc))
    assert redact(api, w.ada, w.base, "conversation/plan.md", 0, doc).status_code == 200
    assert key in objects()
    # When the document is deleted, its last holder, and the sweeper runs with no grace
    assert api.delete(w.ada, w.base, "conversation/plan.md", doc).status_code == 204
    run_sweep()
    # Then the bytes are gone from the bucket, and nothing of the document is left there
    assert key not in objects()
    assert objects() == {}


def test_bytes_a_fork_holds_stay_until_the_child_lets_go_and_then_a_sweep_removes_them(api: Api) -> None:
    # Given a parent whose version 0 holds the secret, forked while that was current
    w = make_world(api)
    doc = created(api.write(w.ada, w.base, "conversation/plan.md", SECRET))
    key = version_content_key("plan.md", 0)
    r = api.post(f"/workspaces/{w.ws}/conversations/{w.conv}/fork", w.ada)
    assert r.status_code == 201, r.text
    child = conv_base(w.ws, r.json()["conversation"]["public_id"])
    # When the parent moves on and redacts version 0
    parent_doc = created(api.write(w.ada, w.base, "conversation/plan.md", "parent clean\n", doc))
    assert redact(api, w.ada, w.base, "conversation/plan.md", 0, parent_doc).status_code == 200
    # Then the object stays, and the child still reads its document
    assert key is not None and objects()[key] == SECRET
    assert current(api, w.ada, child, "conversation/plan.md")["content"] == SECRET
    assert shown_version(api, w.ada, w.base, "conversation/plan.md", 0)["content"] is None
    # When the child moves on too and redacts its inherited version
    child_doc = created(api.write(w.ada, child, "conversation/plan.md", "child clean\n", doc))
    r = redact(api, w.ada, child, "conversation/plan.md", 0, child_doc)
    assert r.status_code == 200, r.text
    assert shown_version(api, w.ada, child, "conversation/plan.md", 0)["content"] is None
    # Then nothing references the bytes any more, and a sweep with no grace removes them
    run_sweep()
    assert key not in objects()
    assert sorted(objects().values()) == ["child clean\n", "parent clean\n"]
    # And both documents still read
    assert current(api, w.ada, w.base, "conversation/plan.md")["content"] == "parent clean\n"
    assert current(api, w.ada, child, "conversation/plan.md")["content"] == "child clean\n"
    assert numbers(history(api, w.ada, child, "conversation/plan.md")) == [1, 0]
