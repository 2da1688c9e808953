"""Merging a fork back: three-way against the fork's base, one conditional commit on the parent, no bytes."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import requests
from agent_memory.store import aws_clients

from ..support import Api, Who, code, conv_base, created
from .test_faults import assert_consistent
from .test_races import client
from .world import aws_calls, bucket_objects

P = "conversation/"


def merge(api: Api, who: Who, ws: str, child: str, strategy: str | None = None, **kw: Any) -> requests.Response:
    body: dict[str, Any] = {"into": "parent"}
    if strategy is not None:
        body["strategy"] = strategy
    return api.post(f"/workspaces/{ws}/conversations/{child}/merge", who, {"merge": body}, **kw)


def fork(api: Api, who: Who, ws: str, conv: str) -> str:
    r = api.post(f"/workspaces/{ws}/conversations/{conv}/fork", who)
    assert r.status_code == 201, r.text
    return str(r.json()["conversation"]["public_id"])


def docs(api: Api, who: Who, ws: str, conv: str) -> dict[str, dict[str, Any]]:
    r = api.ls(who, conv_base(ws, conv))
    assert r.status_code == 200, r.text
    return {m["path"]: m for m in r.json()["memory"]}


def text(api: Api, who: Who, ws: str, conv: str, path: str) -> str | None:
    r = api.show(who, conv_base(ws, conv), path)
    if r.status_code == 404:
        return None
    assert r.status_code == 200, r.text
    out: str = r.json()["memory"]["content"]
    return out


def pair_of(listing: dict[str, dict[str, Any]], path: str) -> dict[str, Any] | None:
    m = listing.get(path)
    return None if m is None else {"public_id": m["public_id"], "lock_version": m["lock_version"]}


def write(api: Api, who: Who, ws: str, conv: str, path: str, content: str) -> None:
    current = docs(api, who, ws, conv).get(path)
    expected = (None, None) if current is None else (current["public_id"], current["lock_version"])
    created(api.write(who, conv_base(ws, conv), path, content, expected))


def remove(api: Api, who: Who, ws: str, conv: str, path: str) -> None:
    m = docs(api, who, ws, conv)[path]
    r = api.delete(who, conv_base(ws, conv), path, (m["public_id"], m["lock_version"]))
    assert r.status_code == 204, r.text


# Every cell of the table, one path each: (what the child does, what the parent does) since the fork.
CELLS: dict[str, tuple[str | None, str | None, str | None]] = {
    # path: (base content, child's content after, parent's content after); "-" deletes, None leaves it
    "unchanged.md": ("u", None, None),
    "child-only.md": ("c0", "c1", None),
    "parent-only.md": ("p0", None, "p1"),
    "both-same.md": ("s0", "s1", "s1"),
    "both-differ.md": ("d0", "child", "parent"),
    "child-created.md": (None, "new", None),
    "parent-created.md": (None, None, "new"),
    "created-same.md": (None, "twin", "twin"),
    "created-differ.md": (None, "mine", "yours"),
    "child-deleted.md": ("x", "-", None),
    "parent-deleted.md": ("y", None, "-"),
    "both-deleted.md": ("z", "-", "-"),
    "child-deleted-parent-changed.md": ("w0", "-", "w1"),
    "child-changed-parent-deleted.md": ("v0", "v1", "-"),
}
CONFLICTS = {
    "both-differ.md",
    "created-differ.md",
    "child-deleted-parent-changed.md",
    "child-changed-parent-deleted.md",
}
LANDS_ALWAYS = {"child-only.md", "child-created.md", "child-deleted.md"}


def _apply(api: Api, who: Who, ws: str, conv: str, path: str, change: str | None) -> None:
    if change == "-":
        remove(api, who, ws, conv, P + path)
    elif change is not None:
        write(api, who, ws, conv, P + path, change)


@pytest.fixture
def table(api: Api) -> tuple[Who, str, str, str]:
    """A parent and a fork of it, each changed since the fork as CELLS says."""
    ada, ws, parent = api.room()
    for path, (base, _, _) in CELLS.items():
        if base is not None:
            write(api, ada, ws, parent, P + path, base)
    child = fork(api, ada, ws, parent)
    for path, (_, in_child, in_parent) in CELLS.items():
        _apply(api, ada, ws, child, path, in_child)
        _apply(api, ada, ws, parent, path, in_parent)
    return ada, ws, parent, child


def _expected_parent(strategy: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for path, (base, in_child, in_parent) in CELLS.items():
        parents = base if in_parent is None else None if in_parent == "-" else in_parent
        childs = base if in_child is None else None if in_child == "-" else in_child
        lands = path in LANDS_ALWAYS or (path in CONFLICTS and strategy == "prefer_child")
        out[P + path] = childs if lands else parents
    return out


def test_fail_refuses_every_conflict_by_name_and_changes_nothing(api: Api, table: tuple[Who, str, str, str]) -> None:
    ada, ws, parent, child = table
    before = docs(api, ada, ws, parent)
    child_docs = docs(api, ada, ws, child)
    revision = api.show_conversation(ada, ws, parent)["context_revision"]
    # When the fork is merged with the default strategy
    r = merge(api, ada, ws, child)
    # Then it is 409 merge_conflict naming each conflicting path and the three sides' pairs
    assert code(r) == (409, "merge_conflict")
    conflicts = {c["path"]: c for c in r.json()["error"]["details"]["conflicts"]}
    assert set(conflicts) == {P + p for p in CONFLICTS}
    c = conflicts[P + "both-differ.md"]
    assert c["parent"] == pair_of(before, P + "both-differ.md")
    assert c["child"] == pair_of(child_docs, P + "both-differ.md")
    assert c["base"]["public_id"] == c["parent"]["public_id"] and c["base"]["lock_version"] == 0
    created_differ = conflicts[P + "created-differ.md"]
    assert created_differ["base"] is None
    assert conflicts[P + "child-deleted-parent-changed.md"]["child"] is None
    assert conflicts[P + "child-changed-parent-deleted.md"]["parent"] is None
    # And nothing changed on the parent, nor its revision; explicit "fail" says the same
    assert docs(api, ada, ws, parent) == before
    assert api.show_conversation(ada, ws, parent)["context_revision"] == revision
    assert code(merge(api, ada, ws, child, "fail")) == (409, "merge_conflict")


@pytest.mark.parametrize("strategy", ["prefer_child", "prefer_parent"])
def test_every_cell_of_the_table(api: Api, table: tuple[Who, str, str, str], strategy: str) -> None:
    ada, ws, parent, child = table
    child_before = docs(api, ada, ws, child)
    revision = api.show_conversation(ada, ws, parent)["context_revision"]
    # When the fork is merged resolving conflicts one way
    r = merge(api, ada, ws, child, strategy)
    assert r.status_code == 200, r.text
    out = r.json()["merge"]
    # Then landed names what changed on the parent and kept every other path of either side
    lands = LANDS_ALWAYS | (CONFLICTS if strategy == "prefer_child" else set())
    assert out["landed"] == sorted(P + p for p in lands)
    assert out["kept"] == sorted(P + p for p in CELLS if p not in lands)
    # And the parent holds exactly what the table says, its revision bumped once
    expected = _expected_parent(strategy)
    after = docs(api, ada, ws, parent)
    assert set(after) == {p for p, v in expected.items() if v is not None}
    for path, content in expected.items():
        assert text(api, ada, ws, parent, path) == content, path
    assert out["conversation"]["public_id"] == parent
    assert out["conversation"]["context_revision"] == revision + 1
    assert api.show_conversation(ada, ws, parent) == out["conversation"]
    # And the child is untouched
    assert docs(api, ada, ws, child) == child_before
    assert_consistent()


def test_a_landed_version_points_at_the_childs_bytes_and_records_where_it_came_from(api: Api) -> None:
    ada, ws, parent = api.room()
    write(api, ada, ws, parent, P + "plan.md", "v0")
    child = fork(api, ada, ws, parent)
    write(api, ada, ws, child, P + "plan.md", "from the child")
    write(api, ada, ws, child, P + "new.md", "created in the child")
    theirs = docs(api, ada, ws, child)
    objects_before = set(bucket_objects())
    # When it is merged
    with aws_calls() as seen:
        r = merge(api, ada, ws, child)
    assert r.status_code == 200, r.text
    # Then no content byte moved: not one S3 request, no new object
    assert not [k for k in seen if k.startswith("s3:")]
    assert set(bucket_objects()) == objects_before
    # And the parent's plan is a new version of its own document, operation merge, naming the child's version
    mine = docs(api, ada, ws, parent)
    assert mine[P + "plan.md"]["lock_version"] == 1
    assert mine[P + "new.md"]["public_id"] != theirs[P + "new.md"]["public_id"]
    for path in ("plan.md", "new.md"):
        v = api.post(f"{conv_base(ws, parent)}/versions", ada, {"memory": {"path": P + path}}).json()["versions"][0]
        assert v["operation"] == "merge"
        assert v["merged_from"] == {
            "conversation_public_id": child,
            "public_id": theirs[P + path]["public_id"],
            "lock_version": theirs[P + path]["lock_version"],
        }
        assert (
            v["content_sha256"]
            == api.post(f"{conv_base(ws, child)}/versions", ada, {"memory": {"path": P + path}}).json()["versions"][0][
                "content_sha256"
            ]
        )
    assert text(api, ada, ws, parent, P + "plan.md") == "from the child"
    # And from then on each side is its own again
    write(api, ada, ws, child, P + "plan.md", "child again")
    assert text(api, ada, ws, parent, P + "plan.md") == "from the child"


def test_merging_again_finds_the_same_content_on_both_sides_and_changes_nothing(api: Api) -> None:
    ada, ws, parent = api.room()
    write(api, ada, ws, parent, P + "a.md", "a0")
    child = fork(api, ada, ws, parent)
    write(api, ada, ws, child, P + "a.md", "a1")
    assert merge(api, ada, ws, child).status_code == 200
    revision = api.show_conversation(ada, ws, parent)["context_revision"]
    # A second merge sees the same change on both sides: no conflict, nothing lands, nothing bumps
    r = merge(api, ada, ws, child)
    assert r.status_code == 200, r.text
    assert r.json()["merge"]["landed"] == [] and r.json()["merge"]["kept"] == [P + "a.md"]
    assert api.show_conversation(ada, ws, parent)["context_revision"] == revision


def test_a_merge_of_64_changed_documents_lands_them_all_at_once(api: Api) -> None:
    ada, ws, parent = api.room()
    for i in range(64):
        write(api, ada, ws, parent, f"{P}d{i:02d}.md", f"base {i}")
    child = fork(api, ada, ws, parent)
    for i in range(64):
        write(api, ada, ws, child, f"{P}d{i:02d}.md", f"child {i}")
    r = merge(api, ada, ws, child)
    assert r.status_code == 200, r.text
    assert len(r.json()["merge"]["landed"]) == 64
    assert all(m["lock_version"] == 1 for m in docs(api, ada, ws, parent).values())
    assert text(api, ada, ws, parent, f"{P}d63.md") == "child 63"
    assert_consistent()


def test_a_merge_that_would_pass_64_documents_is_memory_full_and_changes_nothing(api: Api) -> None:
    ada, ws, parent = api.room()
    for i in range(63):
        write(api, ada, ws, parent, f"{P}d{i:02d}.md", f"doc {i}")
    child = fork(api, ada, ws, parent)
    write(api, ada, ws, child, P + "from-child.md", "c")
    write(api, ada, ws, parent, P + "from-parent.md", "p")
    before = docs(api, ada, ws, parent)
    assert code(merge(api, ada, ws, child)) == (422, "memory_full")
    assert docs(api, ada, ws, parent) == before
    # A delete on the child that lands with it makes room: the count is what the merge leaves
    remove(api, ada, ws, child, f"{P}d00.md")
    r = merge(api, ada, ws, child)
    assert r.status_code == 200, r.text
    assert len(docs(api, ada, ws, parent)) == 64


def test_a_parent_written_during_the_merge_refuses_it_stale_object(api: Api) -> None:
    ada, ws, parent = api.room()
    write(api, ada, ws, parent, P + "a.md", "a0")
    child = fork(api, ada, ws, parent)
    write(api, ada, ws, child, P + "a.md", "child")
    held, go = threading.Event(), threading.Event()

    def hold(**_: Any) -> None:
        if not held.is_set():
            held.set()
            go.wait(30)

    answers: list[requests.Response] = []
    merging = threading.Thread(target=lambda: answers.append(merge(client(api), ada, ws, child)))
    ddb, _ = aws_clients()
    ddb.meta.events.register("before-call.dynamodb.TransactWriteItems", hold, unique_id="test-merge-hold")
    try:
        merging.start()
        assert held.wait(30)
        # When, while the merge is about to commit, another writer changes a document it does not touch
        ddb.meta.events.unregister("before-call.dynamodb.TransactWriteItems", unique_id="test-merge-hold")
        write(api, ada, ws, parent, P + "other.md", "concurrent")
    finally:
        go.set()
        merging.join(30)
        ddb.meta.events.unregister("before-call.dynamodb.TransactWriteItems", unique_id="test-merge-hold")
    # Then the merge is refused whole, and the parent has only the concurrent write
    (answer,) = answers
    assert code(answer) == (409, "stale_object")
    assert text(api, ada, ws, parent, P + "a.md") == "a0"
    assert text(api, ada, ws, parent, P + "other.md") == "concurrent"
    # And merging again now lands
    assert merge(api, ada, ws, child).json()["merge"]["landed"] == [P + "a.md"]


def test_refusals_of_the_request_and_of_the_conversations(api: Api) -> None:
    ada, ws, parent = api.room()
    child = fork(api, ada, ws, parent)
    at = f"/workspaces/{ws}/conversations/{child}/merge"
    assert code(api.post(at, ada, {})) == (400, "parameter_missing")
    assert code(api.post(at, ada, {"merge": {}})) == (400, "parameter_missing")
    assert code(api.post(at, ada, {"merge": {"into": "sibling"}})) == (400, "parameter_invalid")
    assert code(api.post(at, ada, {"merge": {"into": "parent", "strategy": "ours"}})) == (400, "parameter_invalid")
    # A conversation that is no fork has nothing to merge into
    assert code(merge(api, ada, ws, parent)) == (422, "validation_failed")
    # A viewer may not merge; a stranger sees nothing
    viewer, stranger = api.human(ada, "vic"), api.human(ada, "sam")
    api.member(ada, ws, viewer, "viewer")
    assert code(merge(api, viewer, ws, child)) == (403, "not_authorized")
    assert code(merge(api, stranger, ws, child)) == (404, "not_found")
    # An archived parent refuses it as any write to its memory
    write(api, ada, ws, child, P + "a.md", "a")
    assert api.post(f"/workspaces/{ws}/conversations/{parent}/archive", ada).status_code == 200
    assert code(merge(api, ada, ws, child)) == (409, "conversation_archived")
    assert docs(api, ada, ws, parent) == {}


def test_a_keyed_merge_lands_once_and_replays_its_answer(api: Api) -> None:
    ada, ws, parent = api.room()
    child = fork(api, ada, ws, parent)
    write(api, ada, ws, child, P + "a.md", "a")
    first = merge(api, ada, ws, child, headers={"Idempotency-Key": "m-1"})
    again = merge(api, ada, ws, child, headers={"Idempotency-Key": "m-1"})
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert api.show_conversation(ada, ws, parent)["context_revision"] == 1
