"""Promote over HTTP (issue 11): a chosen version copied into the workspace's shared memory.

`POST /workspaces/{ws}/memory/promote` reads one version of a document the caller can read (in a
conversation, the workspace or the caller's own user/ root) and writes it into a workspace/ document
under the usual condition on the target. The target's new version says where it came from; the source
is untouched. A skill is never clobbered: the promoted text is appended as a section naming its
provenance, so earlier promotes and hand-written text survive.
"""

from __future__ import annotations

from typing import Any

from ..support import CONV, USER, WORKSPACE, Api, Who, bindings, code, created, pair
from .histories import PROFILE, author, current, history, numbers, objects, promote, redact, sha
from .world import World, aws_calls, make_world

SHOW_KEYS = {
    "path",
    "public_id",
    "lock_version",
    "bytesize",
    "description",
    "written_at",
    "written_by",
    "pii",
    "quarantine",
}


def _world(api: Api) -> World:
    w = make_world(api)
    assert w.configure(bindings(CONV, WORKSPACE, USER)).status_code == 200
    return w


def _conv_source(w: World, path: str = "conversation/finding.md") -> tuple[str, int]:
    """A conversation document whose version 0 is worth sharing and version 1 is not."""
    doc = created(w.api.write(w.ada, w.base, path, "the build needs node 20\n"))
    return created(w.api.write(w.ada, w.base, path, "scratch, ignore\n", doc))


def _source(w: World, path: str = "conversation/finding.md", lock_version: int = 0) -> dict[str, Any]:
    return {"conversation_public_id": w.conv, "path": path, "lock_version": lock_version}


def _untouched(w: World, who: Who, base: str, path: str) -> tuple[Any, ...]:
    return history(w.api, who, base, path), current(w.api, who, base, path)


def test_a_promote_copies_the_chosen_version_into_a_new_workspace_document(api: Api) -> None:
    w = _world(api)
    src = _conv_source(w)
    before = _untouched(w, w.ada, w.base, "conversation/finding.md")
    revision = w.revision()
    # When Ada promotes version 0 of her conversation note into a new room document
    r = promote(api, w.ada, w.ws, _source(w), "workspace/build.md")
    # Then the answer is the new document in the show shape, holding version 0's text
    assert r.status_code == 201, r.text
    m = r.json()["memory"]
    assert SHOW_KEYS | {"content", "content_sha256"} == set(m)
    assert (m["path"], m["lock_version"], m["content"]) == ("workspace/build.md", 0, "the build needs node 20\n")
    assert m["content_sha256"] == sha("the build needs node 20\n")
    assert m["written_by"] == author(w.ada, "ada")
    # And the whole room reads it through its door
    assert current(api, w.ada, w.ws_base, "workspace/build.md") == m
    # And its one version records the promote, where it came from and who promoted it
    (v,) = history(api, w.ada, w.ws_base, "workspace/build.md")
    assert v["operation"] == "promote"
    assert v["promoted_from"] == {
        "anchor_public_id": w.conv,
        "path": "conversation/finding.md",
        "public_id": src[0],
        "lock_version": 0,
    }
    assert v["promoted_by"] == v["author"] == author(w.ada, "ada")
    # And the source is untouched, and no conversation's revision moved
    assert _untouched(w, w.ada, w.base, "conversation/finding.md") == before
    assert w.revision() == revision


def test_a_promote_is_conditional_on_the_target(api: Api) -> None:
    w = _world(api)
    _conv_source(w)
    target = created(api.write(w.ada, w.ws_base, "workspace/build.md", "hand-written\n"))
    before = _untouched(w, w.ada, w.ws_base, "workspace/build.md")
    stored = objects()
    # null/null only creates; an old or foreign pair is stale: refused, nothing written, no object stored
    for stale in ((None, None), (target[0], 1), ("01990000-0000-7000-8000-0000000000ff", 0)):
        r = promote(api, w.ada, w.ws, _source(w), "workspace/build.md", stale)
        assert code(r) == (409, "stale_object"), stale
    assert code(promote(api, w.ada, w.ws, _source(w), "workspace/build.md", (target[0], None))) == (
        400,
        "parameter_invalid",
    )
    assert _untouched(w, w.ada, w.ws_base, "workspace/build.md") == before
    assert objects() == stored
    # And under the current pair, a plain document is replaced by the promoted text as its next version
    r = promote(api, w.ada, w.ws, _source(w), "workspace/build.md", target)
    assert r.status_code == 201, r.text
    assert (pair(r), r.json()["memory"]["content"]) == ((target[0], 1), "the build needs node 20\n")
    assert [x["operation"] for x in history(api, w.ada, w.ws_base, "workspace/build.md")] == ["promote", "write"]


def test_promotes_into_a_skill_append_provenance_tagged_sections(api: Api) -> None:
    w = _world(api)
    path = "workspace/skills/builds"
    # Given a hand-written skill, and two conversation notes worth sharing
    skill = created(api.write(w.ada, w.ws_base, path, "# Builds\n\nAsk Ada first.", description="How we build"))
    _conv_source(w)
    other = created(api.write(w.ada, w.base, "conversation/cache.md", "clear the cache on failure\n"))
    # When both are promoted into the skill, each under the skill's pair of the moment
    first = promote(api, w.ada, w.ws, _source(w), path, skill)
    assert first.status_code == 201, first.text
    second = promote(api, w.ada, w.ws, _source(w, "conversation/cache.md"), path, pair(first))
    assert second.status_code == 201, second.text
    # Then the skill holds the hand-written text and both promoted texts, in order, each under a heading
    # naming where it came from, and it keeps its description
    text = current(api, w.ada, w.ws_base, path)["content"]
    assert text.startswith("# Builds\n\nAsk Ada first.\n")
    a = text.index("## Promoted from conversation/finding.md (version 0)")
    b = text.index("## Promoted from conversation/cache.md (version 0)")
    assert a < text.index("the build needs node 20\n") < b < text.index("clear the cache on failure\n")
    assert "scratch, ignore" not in text
    assert w.conv in text and other[0] in text and "Promoted by ada" in text
    assert current(api, w.ada, w.ws_base, path)["description"] == "How we build"
    # And its history is the write and the two promotes, each naming its source
    rows = history(api, w.ada, w.ws_base, path)
    assert [(v["lock_version"], v["operation"]) for v in rows] == [(2, "promote"), (1, "promote"), (0, "write")]
    assert [v["promoted_from"]["path"] for v in rows[:2]] == ["conversation/cache.md", "conversation/finding.md"]
    assert all(v["description"] == "How we build" for v in rows)
    # And a hand edit after the promotes is kept by the next promote too
    edited = api.edit(w.ada, w.ws_base, path, "Ask Ada first.", "Ask Ada or Bob first.", pair(second))
    assert edited.status_code == 200, edited.text
    third = promote(api, w.ada, w.ws, _source(w), path, pair(edited))
    assert third.status_code == 201, third.text
    final = third.json()["memory"]["content"]
    assert "Ask Ada or Bob first." in final
    assert final.count("## Promoted from") == 3 and final.count("the build needs node 20") == 2


def test_a_promote_may_create_a_skill_with_its_description(api: Api) -> None:
    w = _world(api)
    _conv_source(w)
    r = promote(api, w.ada, w.ws, _source(w), "workspace/skills/node", description="Which node to use")
    assert r.status_code == 201, r.text
    m = r.json()["memory"]
    assert m["description"] == "Which node to use"
    assert m["content"].startswith("## Promoted from conversation/finding.md (version 0)")
    assert m["content"].endswith("the build needs node 20\n")


def test_a_promote_writes_only_into_workspace(api: Api) -> None:
    w = _world(api)
    _conv_source(w)
    listing = w.listing()
    stored = objects()
    for target in ("conversation/copy.md", "user/copy.md", "agent/copy.md"):
        assert code(promote(api, w.ada, w.ws, _source(w), target)) == (422, "memory_path_invalid"), target
    assert code(promote(api, w.ada, w.ws, _source(w), "copy.md")) == (422, "memory_path_invalid")
    assert w.listing() == listing
    assert objects() == stored


def test_a_redacted_or_unknown_source_version_is_refused(api: Api) -> None:
    w = _world(api)
    src = _conv_source(w)
    assert redact(api, w.ada, w.base, "conversation/finding.md", 0, src).status_code == 200
    listing = w.listing()
    assert code(promote(api, w.ada, w.ws, _source(w), "workspace/build.md")) == (409, "memory_version_redacted")
    assert code(promote(api, w.ada, w.ws, _source(w, lock_version=7), "workspace/build.md")) == (
        404,
        "memory_version_not_found",
    )
    assert code(promote(api, w.ada, w.ws, _source(w, "conversation/none.md"), "workspace/build.md")) == (
        404,
        "memory_not_found",
    )
    bad = {**_source(w), "lock_version": -1}
    assert code(promote(api, w.ada, w.ws, bad, "workspace/build.md")) == (400, "parameter_invalid")
    assert code(promote(api, w.ada, w.ws, {"path": "conversation/finding.md"}, "workspace/build.md")) == (
        400,
        "parameter_missing",
    )
    assert w.listing() == listing
    # And the version not redacted still promotes
    assert promote(api, w.ada, w.ws, _source(w, lock_version=1), "workspace/build.md").status_code == 201


def test_a_viewer_of_the_workspace_cannot_promote(api: Api) -> None:
    w = _world(api)
    vic = api.human(w.ada, "vic")
    api.member(w.ada, w.ws, vic, role="viewer")
    _conv_source(w)
    listing = w.listing()
    # The viewer reads the source version, but may not write the room
    assert api.post(
        f"{w.base}/versions/show", vic, {"memory": {"path": "conversation/finding.md", "lock_version": 0}}
    ).json()["version"]["content"] == ("the build needs node 20\n")
    assert code(promote(api, vic, w.ws, _source(w), "workspace/build.md")) == (403, "not_authorized")
    assert w.listing() == listing
    # And someone outside the room finds neither
    eve = api.account("other", "eve")
    assert code(promote(api, eve, w.ws, _source(w), "workspace/build.md")) == (404, "not_found")
    assert w.listing() == listing


def test_a_promote_reads_its_source_from_the_workspace_or_the_callers_own_user_root(api: Api) -> None:
    w = _world(api)
    # From an older version of another room document
    room = created(api.write(w.ada, w.ws_base, "workspace/draft.md", "draft one\n"))
    created(api.write(w.ada, w.ws_base, "workspace/draft.md", "draft two\n", room))
    r = promote(api, w.ada, w.ws, {"path": "workspace/draft.md", "lock_version": 0}, "workspace/final.md")
    assert r.status_code == 201, r.text
    assert r.json()["memory"]["content"] == "draft one\n"
    (v,) = history(api, w.ada, w.ws_base, "workspace/final.md")
    assert v["promoted_from"] == {
        "anchor_public_id": w.ws,
        "path": "workspace/draft.md",
        "public_id": room[0],
        "lock_version": 0,
    }
    assert numbers(history(api, w.ada, w.ws_base, "workspace/draft.md")) == [1, 0]
    # From the caller's own user/ root
    mine = created(api.write(w.ada, PROFILE, "user/tips.md", "use the fast runner\n"))
    r = promote(api, w.ada, w.ws, {"path": "user/tips.md", "lock_version": 0}, "workspace/tips.md")
    assert r.status_code == 201, r.text
    assert r.json()["memory"]["content"] == "use the fast runner\n"
    (v,) = history(api, w.ada, w.ws_base, "workspace/tips.md")
    assert v["promoted_from"] == {
        "anchor_public_id": w.ada.public_id,
        "path": "user/tips.md",
        "public_id": mine[0],
        "lock_version": 0,
    }
    # And another person's user/ root is not the caller's to read: Bob's promote finds only his own
    bob = api.human(w.ada, "bob")
    api.member(w.ada, w.ws, bob)
    assert code(promote(api, bob, w.ws, {"path": "user/tips.md", "lock_version": 0}, "workspace/b.md")) == (
        404,
        "memory_not_found",
    )
    assert history(api, w.ada, PROFILE, "user/tips.md")[0]["lock_version"] == 0


# ---- what it costs ---------------------------------------------------------------------------------------


def test_a_promote_reads_its_source_and_its_target_in_one_batch(api: Api) -> None:
    # Given a conversation note, a user/ note and a room document, their contents cached
    w = _world(api)
    _conv_source(w)
    created(api.write(w.ada, PROFILE, "user/tips.md", "use the fast runner\n"))
    created(api.write(w.ada, w.ws_base, "workspace/draft.md", "draft one\n"))
    sources = {
        "conversation": _source(w),
        "user": {"path": "user/tips.md", "lock_version": 0},
        "workspace": {"path": "workspace/draft.md", "lock_version": 0},
    }
    for name, source in sources.items():
        # When each is promoted into a new room document
        with aws_calls() as seen:
            r = promote(api, w.ada, w.ws, source, f"workspace/from-{name}.md")
        assert r.status_code == 201, (name, r.text)
        # Then the caller, the source's door, its version record and the target's workspace, membership and
        # row came in ONE batch read: every key is known from the URL and the body; then one S3 put (the
        # target's text is its own object) and the commit
        assert dict(seen) == {"dynamodb:BatchGetItem": 1, "s3:PutObject": 1, "dynamodb:TransactWriteItems": 1}, name
