"""A refused write stores no S3 object when the refusal is known before the PUT: the request's own batch
read already shows the document's current pair (docs/decisions.md, "What a write checks before storing")."""

from __future__ import annotations

import pytest

from ..support import Api, code, pair
from .runs import create, make_run, version
from .world import World, make_world, s3_calls


@pytest.fixture
def w(api: Api) -> World:
    return make_world(api)


def test_a_create_of_an_existing_path_is_stale_and_stores_nothing(w: World) -> None:
    # Given a document at a path
    made = w.api.write(w.owner, w.base, "conversation/plan.md", "ship friday")
    assert made.status_code == 201, made.text
    before = w.snapshot()
    # When it is "created" again with null/null
    with s3_calls("PutObject") as puts:
        r = w.api.write(w.owner, w.base, "conversation/plan.md", "ship monday")
    # Then it is refused as stale, before any content version was stored, and nothing changed
    assert code(r) == (409, "stale_object"), r.text
    assert puts["PutObject"] == 0
    assert w.snapshot() == before


def test_a_replace_with_an_outdated_pair_is_stale_and_stores_nothing(w: World) -> None:
    # Given a document replaced once, so its first pair is outdated
    first = w.api.write(w.owner, w.base, "workspace/notes.md", "v0")
    second = w.api.write(w.owner, w.base, "workspace/notes.md", "v1", pair(first))
    assert second.status_code == 201, second.text
    before = w.snapshot()
    # When a writer replaces it with the outdated pair
    with s3_calls("PutObject") as puts:
        r = w.api.write(w.owner, w.base, "workspace/notes.md", "v2", pair(first))
    # Then stale, no object stored
    assert code(r) == (409, "stale_object"), r.text
    assert puts["PutObject"] == 0
    assert w.snapshot() == before


def test_a_replace_of_a_deleted_document_is_stale_and_stores_nothing(w: World) -> None:
    made = w.api.write(w.owner, w.base, "conversation/gone.md", "bye")
    assert w.api.delete(w.owner, w.base, "conversation/gone.md", pair(made)).status_code == 204
    with s3_calls("PutObject") as puts:
        r = w.api.write(w.owner, w.base, "conversation/gone.md", "back", pair(made))
    assert code(r) == (409, "stale_object"), r.text
    assert puts["PutObject"] == 0


def test_an_accepted_write_still_stores_exactly_one_version(w: World) -> None:
    # The checks only refuse what the commit would refuse: a fresh pair still lands, with one PUT
    made = w.api.write(w.owner, w.base, "conversation/plan.md", "a")
    with s3_calls("PutObject") as puts:
        r = w.api.write(w.owner, w.base, "conversation/plan.md", "b", pair(made))
    assert r.status_code == 201, r.text
    assert puts["PutObject"] == 1


def test_the_models_write_tool_refuses_a_known_stale_write_before_storing(api: Api) -> None:
    # Given an execution that wrote a document twice, so its first version is outdated
    run = make_run(api)
    ex = run.execution()
    first = run.ok(ex, "memory_write", **create("conversation/plan.md", "v1"))
    run.ok(ex, "memory_write", path="conversation/plan.md", content="v2", **version(first))
    # When the model writes with the outdated version, or creates over the path
    with s3_calls("PutObject") as puts:
        stale = run.refused(ex, "memory_write", path="conversation/plan.md", content="v3", **version(first))
        again = run.refused(ex, "memory_write", **create("conversation/plan.md", "again"))
    # Then both are stale, and no content version was stored for either
    assert (stale, again) == ("stale_object", "stale_object")
    assert puts["PutObject"] == 0
