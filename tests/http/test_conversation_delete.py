"""Deleting a conversation (issue 16): a tombstone, then the sweeper.

`POST .../conversations/{c}/delete` (write standing; the conversation's creator or the workspace's creator)
answers 204. From then on every route of the conversation is `not_found`, an alias of it is an unavailable
source (left out of unqualified reads and the block, dropped from effective_memory_context, an explicit path
`memory_scope_unavailable`), binding it anew is `memory_scope_unavailable`, and its executions are stopped.
Its rows and the bytes only they held go with the sweep; its forks and every other conversation keep theirs.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest
from agent_memory.store import CACHE, aws_clients
from agent_memory.store.sweeper import SweepReport, sweep_configured
from agent_memory_sdk.client import NotFound

from ..support import CONV, WORKSPACE, Api, Who, alias, bindings, client_room, code, conv_base, created, listed, pair
from .runs import Run, create, make_run
from .world import bucket_objects, scan_table

pytestmark = pytest.mark.http


@pytest.fixture
def run(api: Api) -> Run:
    return make_run(api)


def run_sweep(grace: float = 0.0) -> SweepReport:
    return sweep_configured(grace_seconds=grace, settle_seconds=0)


def delete(run: Run, conv: str, who: Who | None = None) -> Any:
    return run.api.post(f"{run.conv_url(conv)}/delete", who or run.ada, {})


def anchor_rows(conv: str) -> list[dict[str, Any]]:
    return [i for i in scan_table() if i["pk"] == f"ANCHOR#conversation#{conv}"]


def own_rows(conv: str) -> list[dict[str, Any]]:
    return [i for i in scan_table() if i["pk"] == f"CONV#{conv}"]


def held(conv: str) -> set[str]:
    return {str(i["content_key"]) for i in anchor_rows(conv) if i.get("content_key")}


# ---- the tombstone ------------------------------------------------------------------------------------------


def test_every_route_of_a_deleted_conversation_is_not_found(run: Run) -> None:
    # Given a conversation with a document, a skill in the room and an execution
    base = conv_base(run.ws, run.conv)
    doc = created(run.api.write(run.ada, base, "conversation/plan.md", "the plan"))
    url = run.conv_url()

    # When its creator deletes it
    r = delete(run, run.conv)
    assert r.status_code == 204, r.text
    assert r.content == b""

    # Then every route of that conversation answers 404 not_found, for everyone
    api, ada = run.api, run.ada
    refused = [
        api.get(url, ada),
        api.get(base, ada),
        api.post(f"{base}/show", ada, {"memory": {"path": "conversation/plan.md"}}),
        api.write(ada, base, "conversation/new.md", "x"),
        api.edit(ada, base, "conversation/plan.md", "plan", "idea", doc),
        api.delete(ada, base, "conversation/plan.md", doc),
        api.grep(ada, base, "plan"),
        api.post(f"{base}/versions", ada, {"memory": {"path": "conversation/plan.md"}}),
        api.post(f"{url}/memory_context", ada, {"memory_context": None}),
        api.post(f"{url}/memory_block", ada, {}),
        api.post(f"{url}/archive", ada, {}),
        api.post(f"{url}/fork", ada, {}),
        api.get(f"{url}/skills", ada),
        api.post(f"{url}/skills/load", ada, {"skill": {"name": "deploy"}}),
        run.start(),
        api.get(url, run.bob),
        run.start(run.bob),
    ]
    assert [code(r) for r in refused] == [(404, "not_found")] * len(refused)
    # And deleting it again is not_found too: there is nothing left to delete
    assert code(delete(run, run.conv)) == (404, "not_found")
    # And the workspace's other routes are untouched
    assert run.api.show_conversation(run.ada, run.ws, run.api.conversation(run.ada, run.ws))["archived"] is False


def test_an_archived_conversation_can_be_deleted(run: Run) -> None:
    assert run.api.post(f"{run.conv_url()}/archive", run.ada, {}).status_code == 200
    assert delete(run, run.conv).status_code == 204
    assert code(run.api.get(run.conv_url(), run.ada)) == (404, "not_found")


def test_who_may_delete_a_conversation(run: Run) -> None:
    api = run.api
    carl = api.human(run.ada, "carl")
    api.member(run.ada, run.ws, carl)
    outsider = api.account("other", "olga")
    # Given a conversation Bob (a member) created
    bobs = api.conversation(run.bob, run.ws, answering_agent_public_id=run.alpha.public_id)

    # Then a member who did not create it, the answering agent, and a viewer are refused not_authorized
    assert code(delete(run, bobs, carl)) == (403, "not_authorized")
    assert code(delete(run, bobs, run.alpha)) == (403, "not_authorized")
    assert code(delete(run, bobs, run.vic)) == (403, "not_authorized")
    # And someone who cannot see it at all learns nothing more than not_found
    assert code(delete(run, bobs, outsider)) == (404, "not_found")
    assert code(api.post(f"{run.conv_url(bobs)}/delete", None, {})) == (401, "not_authenticated")
    # And its creator, once only a viewer, has no write standing left
    api.member(run.ada, run.ws, run.bob, role="viewer")
    assert code(delete(run, bobs, run.bob)) == (403, "not_authorized")
    api.member(run.ada, run.ws, run.bob, role="member")
    # And nothing was deleted by any of that
    assert api.show_conversation(run.bob, run.ws, bobs)["public_id"] == bobs

    # When its creator deletes it, it is gone
    assert delete(run, bobs, run.bob).status_code == 204
    # And the workspace's creator deletes any conversation of the room, whoever created it
    carls = api.conversation(carl, run.ws)
    assert delete(run, carls, run.ada).status_code == 204
    assert code(api.get(run.conv_url(carls), carl)) == (404, "not_found")
    # And an agent that created a conversation deletes its own
    own = api.conversation(run.alpha, run.ws)
    assert delete(run, own, run.alpha).status_code == 204


# ---- aliases of a deleted conversation ------------------------------------------------------------------------


def test_an_alias_of_a_deleted_conversation_is_an_unavailable_source(run: Run) -> None:
    api, ada = run.api, run.ada
    # Given a group conversation with a document, and a host that binds it read-write as group/
    group = api.conversation(ada, run.ws)
    created(api.write(ada, conv_base(run.ws, group), "conversation/notes.md", "group deadline"))
    host = api.conversation(ada, run.ws, memory_context=bindings(CONV, WORKSPACE, alias(group, "read_write")))
    hb = conv_base(run.ws, host)
    created(api.write(ada, hb, "conversation/own.md", "own deadline"))
    assert listed(api, ada, hb) == ["conversation/own.md", "group/notes.md"]
    before = api.show_conversation(ada, run.ws, host)
    assert [b["name"] for b in before["effective_memory_context"]["bindings"]] == ["conversation", "workspace", "group"]

    # When the group conversation is deleted
    assert delete(run, group).status_code == 204

    # Then the host's unqualified reads leave group/ out: the listing, grep and the block
    assert listed(api, ada, hb) == ["conversation/own.md"]
    grep = api.grep(ada, hb, "deadline")
    assert [m["path"] for m in grep.json()["matches"]] == ["conversation/own.md"]
    block = api.post(f"{run.conv_url(host)}/memory_block", ada, {})
    assert block.status_code == 200, block.text
    assert "own deadline" in block.json()["memory_block"]["text"]
    assert "group" not in block.json()["memory_block"]["text"]
    # And effective_memory_context drops it, while memory_context keeps the stored configuration verbatim
    after = api.show_conversation(ada, run.ws, host)
    assert [b["name"] for b in after["effective_memory_context"]["bindings"]] == ["conversation", "workspace"]
    assert after["memory_context"] == before["memory_context"]
    # And an explicit path under it is 422 memory_scope_unavailable, on reads and writes alike
    assert code(api.show(ada, hb, "group/notes.md")) == (422, "memory_scope_unavailable")
    assert code(api.grep(ada, hb, "x", path="group/")) == (422, "memory_scope_unavailable")
    assert code(api.write(ada, hb, "group/new.md", "x")) == (422, "memory_scope_unavailable")
    # And the host's own rows still work
    assert api.show(ada, hb, "conversation/own.md").status_code == 200


def test_a_deleted_conversation_cannot_be_bound_anew(run: Run) -> None:
    api, ada = run.api, run.ada
    group = api.conversation(ada, run.ws)
    assert delete(run, group).status_code == 204
    # When a conversation is configured (or created) with an alias of it
    host = api.conversation(ada, run.ws)
    replaced = api.post(f"{run.conv_url(host)}/memory_context", ada, {"memory_context": bindings(CONV, alias(group))})
    fresh = api.post(
        f"/workspaces/{run.ws}/conversations", ada, {"conversation": {"memory_context": bindings(CONV, alias(group))}}
    )
    # Then both are memory_scope_unavailable, and nothing changed
    assert code(replaced) == (422, "memory_scope_unavailable")
    assert code(fresh) == (422, "memory_scope_unavailable")
    assert api.show_conversation(ada, run.ws, host)["memory_context"] is None


# ---- executions of a deleted conversation ---------------------------------------------------------------------


def test_a_deleted_conversations_executions_stop_and_so_do_their_children(run: Run) -> None:
    # Given an execution in the conversation, a child of it spawned in another conversation, and an
    # execution elsewhere whose frozen bindings alias the conversation
    ex = run.execution()
    run.ok(ex, "memory_write", **create("conversation/run.md", "noted"))
    other = run.conversation()
    child = run.execution(conv=other, parent_execution_public_id=ex["public_id"])
    aliasing = run.conversation(memory_context=bindings(CONV, alias(run.conv)))
    reader = run.execution(conv=aliasing)
    assert "group" in run.roots(reader)
    assert run.ok(reader, "memory_read", path="group/run.md")["data"]["content"] == "noted"

    # When the conversation is deleted
    assert delete(run, run.conv).status_code == 204

    # Then its execution's tools and block are 409 execution_stopped, and so are its child's
    for e in (ex, child):
        assert code(run.call(e, "memory_ls")) == (409, "execution_stopped")
        assert code(run.call(e, "memory_write", **create("conversation/late.md", "x"))) == (409, "execution_stopped")
        assert code(run.api.post(f"/executions/{e['public_id']}/memory_block", run.alpha, {})) == (
            409,
            "execution_stopped",
        )
    # And neither spawns anything
    assert code(run.start(conv=other, parent_execution_public_id=ex["public_id"])) == (409, "execution_stopped")
    # And the execution elsewhere keeps running, its group/ root now unavailable
    assert run.refused(reader, "memory_read", path="group/run.md") == "memory_scope_unavailable"
    assert run.ok(reader, "memory_write", **create("conversation/own.md", "mine"))
    # And the stop route still answers its principal that the execution is stopped
    r = run.api.post(f"/executions/{ex['public_id']}/stop", run.alpha, {})
    assert r.status_code == 200, r.text
    assert r.json()["execution"]["stopped"] is True


def test_a_write_that_read_the_conversation_before_its_deletion_does_not_land(run: Run) -> None:
    # Given a document write whose batch read saw the conversation, and a deletion landing before its commit
    base = conv_base(run.ws, run.conv)
    doc = created(run.api.write(run.ada, base, "conversation/plan.md", "v0"))
    ex = run.execution()
    _, s3 = aws_clients()
    raced = threading.Event()

    def deleter(**_: Any) -> None:
        if not raced.is_set():
            raced.set()
            assert delete(run, run.conv).status_code == 204

    s3.meta.events.register("before-call.s3.PutObject", deleter, unique_id="test-conv-delete-race")
    try:
        # When the door's write and then the execution's write commit
        door = run.api.write(run.ada, base, "conversation/plan.md", "v1", doc)
    finally:
        s3.meta.events.unregister("before-call.s3.PutObject", unique_id="test-conv-delete-race")
    # Then the door's write is refused not_found and nothing landed under the conversation's anchor
    assert raced.is_set()
    assert code(door) == (404, "not_found")
    docs = [r for r in anchor_rows(run.conv) if str(r["sk"]).startswith("DOC#")]
    assert [(r["sk"], r["lock_version"]) for r in docs] == [("DOC#plan.md", 0)]
    # And the execution started before the deletion cannot write either
    assert code(run.call(ex, "memory_write", **create("conversation/late.md", "x"))) == (409, "execution_stopped")


# ---- the sweep --------------------------------------------------------------------------------------------------


def test_a_deleted_conversations_rows_and_bytes_go_with_the_sweep_and_its_fork_keeps_its_own(run: Run) -> None:
    api, ada = run.api, run.ada
    # Given a conversation with two documents, one three versions deep
    base = conv_base(run.ws, run.conv)
    a0 = created(api.write(ada, base, "conversation/a.md", "a v0"))
    a1 = created(api.write(ada, base, "conversation/a.md", "a v1", a0))
    created(api.write(ada, base, "conversation/b.md", "b v0"))
    # And a fork of it (sharing a v1 and b v0), after which the parent writes a v2 only it holds
    fork = api.post(f"{run.conv_url()}/fork", ada, {})
    assert fork.status_code == 201, fork.text
    child = fork.json()["conversation"]["public_id"]
    created(api.write(ada, base, "conversation/a.md", "a v2", a1))
    # And another conversation of the room with a document of its own
    other = api.conversation(ada, run.ws)
    created(api.write(ada, conv_base(run.ws, other), "conversation/c.md", "c v0"))
    child_rows = anchor_rows(child)
    other_rows = anchor_rows(other)
    parent_keys = held(run.conv)
    only_parent = parent_keys - held(child)
    assert len(only_parent) == 2  # a v0 and a v2; a v1 and b v0 are shared with the fork
    # And items of other kinds under the conversation's anchor and beside its row (a later kind, such as store
    # entries, lands in one of these): the sweep removes every item of the conversation whatever its kind
    ddb, _ = aws_clients()
    table = os.environ["TABLE_NAME"]
    ddb.put_item(TableName=table, Item={"pk": {"S": f"ANCHOR#conversation#{run.conv}"}, "sk": {"S": "ENTRY#k"}})
    ddb.put_item(TableName=table, Item={"pk": {"S": f"CONV#{run.conv}"}, "sk": {"S": "ENTRY#k"}})

    # When the conversation is deleted: bounded work, nothing is removed yet but its index entry
    assert delete(run, run.conv).status_code == 204
    (meta,) = [r for r in anchor_rows(run.conv) if r["sk"] == "#META"]
    assert meta["deleted_at"] > 0
    assert any(str(r["sk"]).startswith("VER#") for r in anchor_rows(run.conv))
    assert not [i for i in scan_table() if i["sk"] == f"CONVREF#{run.conv}"]
    # And a sweep within the grace period leaves it for later
    young = run_sweep(grace=3600)
    assert (young.conversations, young.conversations_young, young.conversation_rows_deleted) == (1, 1, 0)
    assert parent_keys <= set(bucket_objects("content/"))

    # When the sweeper runs past the grace period
    report = run_sweep()

    # Then every item under the deleted conversation's anchor is gone, #META included, and so is every item
    # beside its row but the tombstone
    assert anchor_rows(run.conv) == []
    assert [r["sk"] for r in own_rows(run.conv)] == ["CONV"]
    assert own_rows(run.conv)[0]["deleted_at"] > 0
    assert (report.conversations, report.conversations_eligible, report.memories) == (1, 1, 0)
    # And the bytes only it held are gone, while those its fork shares stay
    objects = bucket_objects("content/")
    assert not only_parent & set(objects)
    assert held(child) <= set(objects)
    assert report.deleted == len(only_parent)
    # And the fork's rows and the other conversation's are exactly as they were, and read from S3 itself
    assert anchor_rows(child) == child_rows
    assert anchor_rows(other) == other_rows
    CACHE.clear()
    cb = conv_base(run.ws, child)
    assert api.show(ada, cb, "conversation/a.md").json()["memory"]["content"] == "a v1"
    assert api.show(ada, cb, "conversation/b.md").json()["memory"]["content"] == "b v0"
    versions = api.post(f"{cb}/versions", ada, {"memory": {"path": "conversation/a.md"}})
    assert versions.status_code == 200, versions.text
    assert api.show(ada, conv_base(run.ws, other), "conversation/c.md").json()["memory"]["content"] == "c v0"
    # And the fork still works as a conversation of its own
    fa = pair(api.show(ada, cb, "conversation/a.md"))
    assert created(api.write(ada, cb, "conversation/a.md", "child's own", fa))
    assert api.show_conversation(ada, run.ws, child)["parent_public_id"] == run.conv
    # And the conversation stays deleted, and the next sweep has nothing more to do
    assert code(api.get(run.conv_url(), ada)) == (404, "not_found")
    again = run_sweep()
    assert (again.conversations, again.conversation_rows_deleted, again.deleted) == (0, 0, 0)


def test_deleting_an_empty_conversation_leaves_only_its_tombstone_after_the_sweep(run: Run) -> None:
    empty = run.api.conversation(run.ada, run.ws)
    assert delete(run, empty).status_code == 204
    report = run_sweep()
    assert report.conversation_rows_deleted == 1  # the #META mark the deletion made
    assert anchor_rows(empty) == []
    assert [r["sk"] for r in own_rows(empty)] == ["CONV"]


def test_deleting_through_the_python_client(fresh: Any) -> None:
    _, owner, ws = client_room(fresh.url, fresh.operator_key)
    conv = owner.create_conversation(ws)["public_id"]
    owner.delete_conversation(ws, conv)
    with pytest.raises(NotFound):
        owner.show_conversation(ws, conv)
    with pytest.raises(NotFound):
        owner.delete_conversation(ws, conv)
