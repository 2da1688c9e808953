"""context_revision: what moves it, what does not, expected_context_revision, and archived conversations."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from ..support import Api, code, pair
from .five_scopes import SCOPE_WORDS, Five, make_five

STALE_PAIR = ("01900000-0000-7000-8000-000000000001", 0)


@pytest.fixture
def five(api: Api) -> Five:
    return make_five(api)


@pytest.mark.parametrize("scope", SCOPE_WORDS)
def test_each_accepted_write_edit_and_delete_moves_the_revision_by_one(five: Five, scope: str) -> None:
    api, ada, base, path = five.api, five.ada, five.base, f"{scope}/plan.md"
    created = api.write(ada, base, path, "draft")
    assert created.status_code == 201 and five.revision() == 1
    replaced = api.write(ada, base, path, "draft two", pair(created))
    assert replaced.status_code == 201 and five.revision() == 2
    edited = api.edit(ada, base, path, "two", "three", pair(replaced))
    assert edited.status_code == 200 and five.revision() == 3
    assert api.delete(ada, base, path, pair(edited)).status_code == 204
    assert five.revision() == 4


def test_reads_and_refusals_move_nothing(five: Five) -> None:
    # Given a document at revision 1
    api, ada, base = five.api, five.ada, five.base
    created = api.write(ada, base, "conversation/plan.md", "ship friday")
    assert five.revision() == 1
    # When it is read every way, and every kind of refusal is provoked
    reads = [
        api.show(ada, base, "conversation/plan.md"),
        api.ls(ada, base),
        api.grep(ada, base, "ship"),
        five.block(),
        five.skills(),
    ]
    refusals = [
        api.write(ada, base, "conversation/plan.md", "again"),  # stale_object (exists)
        api.write(ada, base, "conversation/plan.md", "x", STALE_PAIR),  # stale_object
        api.edit(ada, base, "conversation/plan.md", "absent", "y", pair(created)),  # memory_edit_not_found
        api.delete(ada, base, "conversation/plan.md", STALE_PAIR),  # stale_object
        api.write(ada, base, "conversation/skills/pdf", "x", description="d"),  # skill_scope_unavailable
        api.write(ada, base, "workspace/skills/pdf", "x"),  # skill_description_required
        api.write(ada, base, "workspace/n.md", "x", description="d"),  # memory_description_invalid
        api.write(ada, base, "conversation/big.md", "x" * (64 * 1024 + 1)),  # memory_document_too_large
        api.write(ada, base, "conversation/new.md", "x", expected_context_revision=0),  # stale_object
    ]
    # Then the reads were served, every refusal refused, and the revision did not move
    assert all(r.status_code == 200 for r in reads)
    assert [code(r)[1] for r in refusals] == [
        "stale_object",
        "stale_object",
        "memory_edit_not_found",
        "stale_object",
        "skill_scope_unavailable",
        "skill_description_required",
        "memory_description_invalid",
        "memory_document_too_large",
        "stale_object",
    ]
    assert five.revision() == 1


def test_the_workspace_door_moves_no_conversation_revision(five: Five) -> None:
    # When the room's document is written through the workspace door, then through a conversation
    created = five.api.write(five.ada, five.ws_base, "workspace/room.md", "room")
    assert created.status_code == 201 and five.revision() == 0
    replaced = five.api.write(five.ada, five.base, "workspace/room.md", "room two", pair(created))
    # Then only the conversation door moved that conversation's revision, and no other conversation's
    assert replaced.status_code == 201 and five.revision() == 1
    other = five.conversation()
    assert five.api.write(five.ada, five.base, "workspace/room.md", "three", pair(replaced)).status_code == 201
    assert five.revision(other) == 0


def test_a_binding_change_moves_the_revision(five: Five) -> None:
    r = five.configure(None)
    assert r.status_code == 200, r.text
    assert r.json()["conversation"]["context_revision"] == 1
    bad = five.configure({"bindings": "x"})
    assert code(bad) == (422, "validation_failed")
    assert five.revision() == 1


# ---- expected_context_revision ---------------------------------------------------------------------


def test_writing_verbs_at_the_expected_revision_are_accepted(five: Five) -> None:
    api, ada, base = five.api, five.ada, five.base
    created = api.write(ada, base, "conversation/a.md", "one", expected_context_revision=0)
    assert created.status_code == 201, created.text
    edited = api.edit(ada, base, "conversation/a.md", "one", "two", pair(created), expected_context_revision=1)
    assert edited.status_code == 200, edited.text
    deleted = api.delete(ada, base, "conversation/a.md", pair(edited), expected_context_revision=2)
    assert deleted.status_code == 204, deleted.text
    assert five.revision() == 3


def test_writing_verbs_after_the_revision_moved_are_stale_and_change_nothing(five: Five) -> None:
    # Given a document written at revision 0 -> 1, then another write moving it to 2
    api, ada, base = five.api, five.ada, five.base
    created = api.write(ada, base, "conversation/a.md", "one")
    assert api.write(ada, base, "workspace/b.md", "b").status_code == 201
    assert five.revision() == 2

    # When each writing verb still expects revision 1
    responses = [
        api.write(ada, base, "conversation/new.md", "new", expected_context_revision=1),
        api.write(ada, base, "conversation/a.md", "replaced", pair(created), expected_context_revision=1),
        api.edit(ada, base, "conversation/a.md", "one", "two", pair(created), expected_context_revision=1),
        api.delete(ada, base, "conversation/a.md", pair(created), expected_context_revision=1),
    ]

    # Then each is stale, and the document, the listing and the revision are untouched
    assert [code(r) for r in responses] == [(409, "stale_object")] * 4
    shown = api.show(ada, base, "conversation/a.md").json()["memory"]
    assert (shown["content"], shown["lock_version"]) == ("one", 0)
    assert sorted(m["path"] for m in five.listing()) == ["conversation/a.md", "workspace/b.md"]
    assert five.revision() == 2


@pytest.mark.parametrize("value", [-1, "1", 1.5, True, {}])
def test_a_malformed_expected_context_revision_is_parameter_invalid(five: Five, value: Any) -> None:
    r = five.api.write(five.ada, five.base, "conversation/a.md", "a", expected_context_revision=value)
    assert code(r) == (400, "parameter_invalid")
    assert code(five.block(expected_context_revision=value)) == (400, "parameter_invalid")
    assert five.revision() == 0


def test_the_block_and_a_write_share_one_revision(five: Five) -> None:
    # Given the block a client assembled at some revision
    assert five.api.write(five.ada, five.base, "conversation/a.md", "a").status_code == 201
    seen = five.block().json()["memory_block"]["context_revision"]
    # When someone else writes meanwhile
    assert five.api.write(five.ada, five.base, "conversation/b.md", "b").status_code == 201
    # Then both a write and a block conditioned on what the client saw are refused as stale
    assert code(five.block(expected_context_revision=seen)) == (409, "stale_object")
    late = five.api.write(five.ada, five.base, "conversation/c.md", "c", expected_context_revision=seen)
    assert code(late) == (409, "stale_object")


def test_racing_writers_expecting_one_revision_have_one_winner(five: Five, api: Api) -> None:
    # Given a conversation at revision 0, and 12 writers that all saw revision 0
    n = 12
    barrier = threading.Barrier(n)
    local = threading.local()

    def write(i: int) -> requests.Response:
        me = getattr(local, "api", None) or Api(api.url, api.operator_key)
        local.api = me
        barrier.wait(timeout=30)
        # Each writes its own path, so only the revision condition can make them conflict
        return me.write(five.ada, five.base, f"conversation/w{i}.md", str(i), expected_context_revision=0)

    # When they write at once
    with ThreadPoolExecutor(max_workers=n) as pool:
        responses = list(pool.map(write, range(n)))

    # Then exactly one lands and the revision moved once
    assert Counter(code(r) for r in responses) == {(201, None): 1, (409, "stale_object"): n - 1}
    assert len(five.listing()) == 1
    assert five.revision() == 1


# ---- archived conversations ------------------------------------------------------------------------


def test_an_archived_conversation_refuses_writes_and_keeps_reads(five: Five) -> None:
    # Given a document, then the conversation archived
    api, ada, base = five.api, five.ada, five.base
    created = api.write(ada, base, "conversation/a.md", "kept")
    assert api.post(f"{five.conv_url}/archive", ada, {}).status_code == 200
    revision = five.revision()

    # When each writing verb and a binding change is tried, on any scope, a skill included
    refusals = [
        api.write(ada, base, "conversation/b.md", "b"),
        api.write(ada, base, "workspace/b.md", "b"),
        api.write(ada, base, "agent/skills/pdf", "p", description="pdf"),
        api.write(ada, base, "conversation/a.md", "changed", pair(created)),
        api.edit(ada, base, "conversation/a.md", "kept", "changed", pair(created)),
        api.delete(ada, base, "conversation/a.md", pair(created)),
        five.configure(None),
    ]

    # Then all are conversation_archived, reads still work, and nothing moved
    assert [code(r) for r in refusals] == [(409, "conversation_archived")] * len(refusals)
    assert api.show(ada, base, "conversation/a.md").json()["memory"]["content"] == "kept"
    assert [m["path"] for m in five.listing()] == ["conversation/a.md"]
    assert five.revision() == revision
    # While the room's own door still writes the room's rows
    assert api.write(ada, five.ws_base, "workspace/room.md", "room").status_code == 201
