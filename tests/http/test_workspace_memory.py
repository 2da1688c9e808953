"""The workspace memory door, the sharing of workspace/ rows between doors, and content kept in S3."""

from __future__ import annotations

import pytest

from ..support import Api, code, conv_base, pair, ws_base
from .world import DOC_KEYS, SHOW_KEYS, World, bucket_objects, document_item, make_world


@pytest.fixture
def w(api: Api) -> World:
    return make_world(api)


# ---- the workspace door -------------------------------------------------------------------------------


def test_the_workspace_door_serves_every_verb_and_bumps_no_revision(w: World) -> None:
    # Given a conversation at revision 0 in the workspace
    assert w.revision() == 0
    # When every verb is used through the workspace's own door
    made = w.api.write(w.owner, w.ws_base, "workspace/team.md", "deadline friday\nother")
    assert made.status_code == 201, made.text
    assert set(made.json()["memory"]) == SHOW_KEYS
    listed = w.api.ls(w.owner, w.ws_base)
    assert listed.status_code == 200
    assert [set(row) for row in listed.json()["memory"]] == [DOC_KEYS]
    shown = w.api.show(w.owner, w.ws_base, "workspace/team.md")
    assert shown.json()["memory"] == made.json()["memory"]
    found = w.api.grep(w.owner, w.ws_base, "deadline")
    assert found.json() == {
        "matches": [{"path": "workspace/team.md", "line_number": 1, "text": "deadline friday"}],
        "truncated": False,
        "truncated_reason": None,
    }
    replaced = w.api.write(w.owner, w.ws_base, "workspace/team.md", "deadline monday", pair(made))
    assert replaced.status_code == 201 and pair(replaced)[1] == 1
    edited = w.api.edit(w.owner, w.ws_base, "workspace/team.md", "monday", "tuesday", pair(replaced))
    assert edited.status_code == 200 and edited.json()["memory"]["content"] == "deadline tuesday"
    assert w.api.delete(w.owner, w.ws_base, "workspace/team.md", pair(edited)).status_code == 204
    assert code(w.api.show(w.owner, w.ws_base, "workspace/team.md")) == (404, "memory_not_found")
    # Then the conversation's revision never moved: that door picks no conversation
    assert w.revision() == 0


def test_workspace_documents_are_one_set_through_both_doors(api: Api, w: World) -> None:
    # Given a workspace/ document written through the conversation door, and one through the workspace door
    via_conv = api.write(w.owner, w.base, "workspace/from-conv.md", "written in a conversation")
    via_ws = api.write(w.owner, w.ws_base, "workspace/from-room.md", "written in the room")
    assert via_conv.status_code == 201 and via_ws.status_code == 201
    # When each is read through the other door
    # Then it is the same document: same id, version and content
    assert api.show(w.owner, w.ws_base, "workspace/from-conv.md").json()["memory"] == via_conv.json()["memory"]
    assert api.show(w.owner, w.base, "workspace/from-room.md").json()["memory"] == via_ws.json()["memory"]
    ws_list = api.ls(w.owner, w.ws_base).json()["memory"]
    assert [row["path"] for row in ws_list] == ["workspace/from-conv.md", "workspace/from-room.md"]
    conv_rows = {row["path"]: row for row in w.listing()}
    assert conv_rows["workspace/from-room.md"]["public_id"] == pair(via_ws)[0]
    # And a pair read through one door conditions a change through the other
    edited = api.edit(w.owner, w.ws_base, "workspace/from-conv.md", "conversation", "chat", pair(via_conv))
    assert edited.status_code == 200, edited.text
    assert w.shown("workspace/from-conv.md") == edited.json()["memory"]
    stale = api.write(w.owner, w.base, "workspace/from-conv.md", "late", pair(via_conv))
    assert code(stale) == (409, "stale_object")
    assert api.delete(w.owner, w.base, "workspace/from-room.md", pair(via_ws)).status_code == 204
    assert code(api.show(w.owner, w.ws_base, "workspace/from-room.md")) == (404, "memory_not_found")


def test_the_workspace_door_lists_only_the_room(api: Api, w: World) -> None:
    # Given conversation/ and workspace/ documents
    api.write(w.owner, w.base, "conversation/mine.md", "private needle")
    api.write(w.owner, w.base, "workspace/shared.md", "shared needle")
    # When the workspace door lists and greps
    listed = [row["path"] for row in api.ls(w.owner, w.ws_base).json()["memory"]]
    matches = [m["path"] for m in api.grep(w.owner, w.ws_base, "needle").json()["matches"]]
    # Then the conversation's own documents are not part of it
    assert listed == ["workspace/shared.md"]
    assert matches == ["workspace/shared.md"]
    # And naming a conversation/ path there is not a path of this door
    assert code(api.show(w.owner, w.ws_base, "conversation/mine.md")) == (422, "memory_scope_unavailable")
    assert code(api.show(w.owner, w.ws_base, "notes/x.md")) == (422, "memory_path_invalid")


def test_workspaces_do_not_share_documents(api: Api, w: World) -> None:
    # Given a second workspace of the same owner
    other = api.workspace(w.owner, "other")
    api.write(w.owner, w.ws_base, "workspace/a.md", "first room")
    # Then the same path is absent in the other, and can be created there independently
    assert code(api.show(w.owner, ws_base(other), "workspace/a.md")) == (404, "memory_not_found")
    assert api.write(w.owner, ws_base(other), "workspace/a.md", "second room").status_code == 201
    assert w.shown("workspace/a.md") is not None
    shown = w.shown("workspace/a.md")
    assert shown is not None and shown["content"] == "first room"


def test_workspace_door_refusals_change_nothing(w: World) -> None:
    # Given a room document
    made = w.api.write(w.owner, w.ws_base, "workspace/a.md", "one two two")
    before = w.api.ls(w.owner, w.ws_base).json()
    doc = made.json()["memory"]
    # When the workspace door is sent each kind of refused change
    cases = {
        "stale": (w.api.write(w.owner, w.ws_base, "workspace/a.md", "x", (doc["public_id"], 5)), 409, "stale_object"),
        "exists": (w.api.write(w.owner, w.ws_base, "workspace/a.md", "x"), 409, "stale_object"),
        "ambiguous": (
            w.api.edit(w.owner, w.ws_base, "workspace/a.md", "two", "2", pair(made)),
            422,
            "memory_edit_ambiguous",
        ),
        "absent": (
            w.api.edit(w.owner, w.ws_base, "workspace/a.md", "nine", "9", pair(made)),
            422,
            "memory_edit_not_found",
        ),
        "content": (w.api.write(w.owner, w.ws_base, "workspace/b.md", 5), 422, "memory_content_invalid"),
        "large": (w.api.write(w.owner, w.ws_base, "workspace/b.md", "x" * 65537), 422, "memory_document_too_large"),
        "path": (w.api.write(w.owner, w.ws_base, "workspace/../b.md", "x"), 422, "memory_path_invalid"),
        "bare": (w.api.write(w.owner, w.ws_base, "b.md", "x"), 422, "memory_path_invalid"),
        "condition": (w.api.delete(w.owner, w.ws_base, "workspace/a.md", (None, None)), 400, "parameter_invalid"),
        "missing": (
            w.api.post(w.ws_base, w.owner, {"memory": {"path": "workspace/b.md", "content": "x"}}),
            400,
            "parameter_missing",
        ),
        "limit": (w.api.grep(w.owner, w.ws_base, "x", limit=0), 400, "parameter_invalid"),
    }
    # Then each is refused with its code, and the room is as it was
    for label, (r, status, expected) in cases.items():
        assert code(r) == (status, expected), f"{label}: {r.text}"
    assert w.api.ls(w.owner, w.ws_base).json() == before
    assert w.shown("workspace/a.md") == doc
    assert w.revision() == 0


# ---- content in S3 ------------------------------------------------------------------------------------


def test_every_write_leaves_a_new_immutable_content_object(w: World) -> None:
    # Given a document written, then replaced, then edited
    first = w.api.write(w.owner, w.base, "conversation/plan.md", "first version")
    second = w.api.write(w.owner, w.base, "conversation/plan.md", "second version", pair(first))
    assert second.status_code == 201
    public_id = pair(first)[0]
    item = document_item("conversation", w.conv, "plan.md")
    assert item is not None
    # When the bucket is read
    objects = bucket_objects()
    # Then both versions exist as distinct objects, each holding its own text
    mine = {k: v for k, v in objects.items() if public_id in k}
    assert sorted(mine.values()) == ["first version", "second version"]
    assert len(mine) == 2
    # And the pointer names the newest, with that content's size and hash
    assert item["content_key"] in mine
    assert mine[item["content_key"]] == "second version"
    assert item["lock_version"] == 1 and item["public_id"] == public_id
    assert int(item["bytesize"]) == len(b"second version")
    # When it is edited
    edited = w.api.edit(w.owner, w.base, "conversation/plan.md", "second", "third", pair(second))
    assert edited.status_code == 200
    # Then a third object exists, and the earlier two are untouched
    after = {k: v for k, v in bucket_objects().items() if public_id in k}
    assert len(after) == 3
    assert {k: after[k] for k in mine} == mine
    newest = document_item("conversation", w.conv, "plan.md")
    assert newest is not None and after[newest["content_key"]] == "third version"


def test_a_delete_removes_the_pointer(w: World) -> None:
    made = w.api.write(w.owner, w.base, "conversation/plan.md", "bye")
    assert document_item("conversation", w.conv, "plan.md") is not None
    assert w.api.delete(w.owner, w.base, "conversation/plan.md", pair(made)).status_code == 204
    assert document_item("conversation", w.conv, "plan.md") is None


def test_a_refused_write_moves_no_pointer(w: World) -> None:
    # Given a document
    made = w.api.write(w.owner, w.base, "conversation/plan.md", "kept")
    pointer = document_item("conversation", w.conv, "plan.md")
    # When a stale replace is refused
    r = w.api.write(w.owner, w.base, "conversation/plan.md", "lost", (pair(made)[0], 4))
    assert code(r) == (409, "stale_object")
    # Then the pointer row is exactly as it was (an orphaned object at most, never a visible change)
    assert document_item("conversation", w.conv, "plan.md") == pointer
    assert w.api.show(w.owner, conv_base(w.ws, w.conv), "conversation/plan.md").json()["memory"]["content"] == "kept"
