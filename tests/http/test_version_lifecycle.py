"""How a history begins and ends (issue 11): delete, recreate, fork, and the retention bound.

A delete removes the document with its whole history, at once for every reader, and the sweeper then
removes every object no live row or version holds (the bucket is checked, not only the API). A fork's
child starts its own history with one `fork` version. A document keeps at most
AGENT_MEMORY_VERSIONS_KEPT versions, its current one included: exactly the oldest are pruned.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from agent_memory.core.settings import settings
from agent_memory.store import aws_clients

from ..support import Api, code, conv_base, created, pair
from .histories import (
    current,
    history,
    numbers,
    objects,
    rollback,
    run_sweep,
    sha,
    shown_version,
    version_items,
    version_show,
    versions,
    versions_kept,
)
from .world import World, make_world

KEPT = 3


def _written(w: World, n: int, path: str = "conversation/plan.md", base: str | None = None) -> tuple[str, int]:
    """A document with versions 0..n-1, version i holding "v{i}"."""
    doc = created(w.api.write(w.ada, base or w.base, path, "v0"))
    for i in range(1, n):
        doc = created(w.api.write(w.ada, base or w.base, path, f"v{i}", doc))
    return doc


# ---- delete ------------------------------------------------------------------------------------------


def test_a_delete_removes_the_whole_history_and_a_recreate_starts_a_new_one(api: Api) -> None:
    w = make_world(api)
    vic = api.human(w.ada, "vic")
    api.member(w.ada, w.ws, vic, role="viewer")
    old = _written(w, 3)
    # When the document is deleted
    assert api.delete(w.ada, w.base, "conversation/plan.md", old).status_code == 204
    # Then at once, for every reader, its history is gone with it
    for who in (w.ada, vic):
        assert code(versions(api, who, w.base, "conversation/plan.md")) == (404, "memory_not_found")
        for n in range(3):
            assert code(version_show(api, who, w.base, "conversation/plan.md", n)) == (404, "memory_not_found")
    # And nothing of it can be restored
    assert code(rollback(api, w.ada, w.base, "conversation/plan.md", 0, old)) == (404, "memory_not_found")
    # When a document is created again at the path
    new = created(api.write(w.ada, w.base, "conversation/plan.md", "fresh"))
    # Then it is another document, under a new public_id, whose history is its own one version
    assert new[0] != old[0] and new[1] == 0
    rows = history(api, w.ada, w.base, "conversation/plan.md")
    assert [(v["public_id"], v["lock_version"], v["content_sha256"]) for v in rows] == [(new[0], 0, sha("fresh"))]
    assert code(version_show(api, w.ada, w.base, "conversation/plan.md", 1)) == (404, "memory_version_not_found")
    assert code(version_show(api, w.ada, w.base, "conversation/plan.md", 2)) == (404, "memory_version_not_found")
    # And as it grows, the earlier document's versions never show through
    again = created(api.write(w.ada, w.base, "conversation/plan.md", "fresh 2", new))
    assert [(v["public_id"], v["lock_version"]) for v in history(api, w.ada, w.base, "conversation/plan.md")] == [
        (new[0], 1),
        (new[0], 0),
    ]
    assert code(version_show(api, w.ada, w.base, "conversation/plan.md", 2)) == (404, "memory_version_not_found")
    assert code(rollback(api, w.ada, w.base, "conversation/plan.md", 2, again)) == (404, "memory_version_not_found")
    # And a cursor of the deleted document's listing is no cursor of the new one's
    assert code(versions(api, w.ada, w.base, "conversation/plan.md", limit=1, cursor="x")) == (400, "parameter_invalid")


def test_after_a_delete_the_sweeper_removes_every_object_of_the_deleted_history(api: Api) -> None:
    # Given a document with three versions, one of them a rollback, and another document beside it
    w = make_world(api)
    doc = _written(w, 3)
    doc = pair(rollback(api, w.ada, w.base, "conversation/plan.md", 0, doc))
    created(api.write(w.ada, w.base, "conversation/keep.md", "kept"))
    assert sorted(objects().values()) == ["kept", "v0", "v1", "v2"]
    # When the document is deleted, then a sweep with no grace runs
    assert api.delete(w.ada, w.base, "conversation/plan.md", doc).status_code == 204
    report = run_sweep()
    # Then every object of its history is gone from the bucket, and every record from the table; what
    # still lives stays
    assert sorted(objects().values()) == ["kept"]
    assert report.deleted == 3 and report.failed == 0
    assert version_items("plan.md") == []
    assert len(version_items("keep.md")) == 1
    assert current(api, w.ada, w.base, "conversation/keep.md")["content"] == "kept"
    # And a document recreated at the path keeps its bytes through the next sweep
    fresh = created(api.write(w.ada, w.base, "conversation/plan.md", "fresh"))
    run_sweep()
    assert sorted(objects().values()) == ["fresh", "kept"]
    assert [(i["public_id"], int(i["lock_version"])) for i in version_items("plan.md")] == [(fresh[0], 0)]
    assert current(api, w.ada, w.base, "conversation/plan.md")["content"] == "fresh"


def test_a_sweep_keeps_every_version_a_live_history_shows(api: Api) -> None:
    # Given a document with several versions, a rollback among them
    w = make_world(api)
    doc = _written(w, 4)
    rollback(api, w.ada, w.base, "conversation/plan.md", 1, doc)
    # When a sweep runs with no grace
    report = run_sweep()
    # Then nothing was removed: every version in the history still reads its text from S3
    assert report.deleted == 0
    for n, text in enumerate(["v0", "v1", "v2", "v3", "v1"]):
        assert shown_version(api, w.ada, w.base, "conversation/plan.md", n)["content"] == text


# ---- fork --------------------------------------------------------------------------------------------


def test_a_forks_child_starts_its_own_history_with_one_fork_version(api: Api) -> None:
    # Given a parent document with two versions
    w = make_world(api)
    doc = _written(w, 2)
    stored = objects()
    # When the conversation is forked
    r = api.post(f"/workspaces/{w.ws}/conversations/{w.conv}/fork", w.ada)
    assert r.status_code == 201, r.text
    child = conv_base(w.ws, r.json()["conversation"]["public_id"])
    # Then the child's history is one fork version: the inherited pointer, same public_id and number
    (v,) = history(api, w.ada, child, "conversation/plan.md")
    parent_top = history(api, w.ada, w.base, "conversation/plan.md")[0]
    assert (v["public_id"], v["lock_version"], v["operation"]) == (doc[0], 1, "fork")
    assert v["forked_from"] == {"conversation_public_id": w.conv}
    assert v["content_sha256"] == parent_top["content_sha256"] == sha("v1")
    assert (v["author"], v["written_at"]) == (parent_top["author"], parent_top["written_at"])
    assert shown_version(api, w.ada, child, "conversation/plan.md", 1)["content"] == "v1"
    # And the parent's older versions were not copied, nor any byte
    assert code(version_show(api, w.ada, child, "conversation/plan.md", 0)) == (404, "memory_version_not_found")
    assert objects() == stored
    # When both sides change the document
    created(api.write(w.ada, w.base, "conversation/plan.md", "parent v2", doc))
    child_doc = created(api.write(w.ada, child, "conversation/plan.md", "child v2", doc))
    created(api.write(w.ada, child, "conversation/plan.md", "child v3", child_doc))
    # Then the histories diverge, each with its own versions
    parent_rows = history(api, w.ada, w.base, "conversation/plan.md")
    child_rows = history(api, w.ada, child, "conversation/plan.md")
    assert [(x["lock_version"], x["operation"]) for x in parent_rows] == [(2, "write"), (1, "write"), (0, "write")]
    assert [(x["lock_version"], x["operation"]) for x in child_rows] == [(3, "write"), (2, "write"), (1, "fork")]
    assert shown_version(api, w.ada, w.base, "conversation/plan.md", 2)["content"] == "parent v2"
    assert shown_version(api, w.ada, child, "conversation/plan.md", 2)["content"] == "child v2"
    # And the child may roll back to its fork version, the parent's untouched
    back = rollback(api, w.ada, child, "conversation/plan.md", 1, (doc[0], 3))
    assert back.status_code == 201 and back.json()["memory"]["content"] == "v1"
    assert current(api, w.ada, w.base, "conversation/plan.md")["content"] == "parent v2"


# ---- retention ---------------------------------------------------------------------------------------


@pytest.fixture
def kept(api: Api) -> Iterator[Api]:
    with versions_kept(KEPT):
        yield api


def test_retention_prunes_exactly_the_oldest_versions(kept: Api) -> None:
    api = kept
    w = make_world(api)
    # Given a document written KEPT times: every version is still there
    doc = _written(w, KEPT)
    assert numbers(history(api, w.ada, w.base, "conversation/plan.md")) == [2, 1, 0]
    # When it is written three more times
    for i in range(KEPT, KEPT + 3):
        doc = created(api.write(w.ada, w.base, "conversation/plan.md", f"v{i}", doc))
        # Then from the write that passes the bound on, the listing shows only the newest KEPT
        assert numbers(history(api, w.ada, w.base, "conversation/plan.md")) == list(range(i, i - KEPT, -1))
    # And a pruned version is not found, while each kept one reads its text
    for n in range(0, 3):
        assert code(version_show(api, w.ada, w.base, "conversation/plan.md", n)) == (404, "memory_version_not_found")
        assert code(rollback(api, w.ada, w.base, "conversation/plan.md", n, doc)) == (404, "memory_version_not_found")
    for n in range(3, 6):
        assert shown_version(api, w.ada, w.base, "conversation/plan.md", n)["content"] == f"v{n}"
    # And the table holds no more than KEPT records of the document
    assert sorted(int(i["lock_version"]) for i in version_items("plan.md")) == [3, 4, 5]
    # And a page walk agrees with the bound
    page = versions(api, w.ada, w.base, "conversation/plan.md", limit=2).json()
    rest = versions(api, w.ada, w.base, "conversation/plan.md", limit=2, cursor=page["next_cursor"]).json()
    assert numbers(page["versions"]) + numbers(rest["versions"]) == [5, 4, 3] and rest["next_cursor"] is None
    # And the pruned versions' bytes go with the next sweep, the kept ones stay
    run_sweep()
    assert sorted(objects().values()) == ["v3", "v4", "v5"]
    assert current(api, w.ada, w.base, "conversation/plan.md")["content"] == "v5"


def test_retention_never_touches_the_current_version(kept: Api) -> None:
    api = kept
    w = make_world(api)
    # Given a document rolled back to its oldest kept version, again and again
    doc = _written(w, KEPT)
    for _ in range(KEPT + 1):
        low = min(numbers(history(api, w.ada, w.base, "conversation/plan.md")))
        r = rollback(api, w.ada, w.base, "conversation/plan.md", low, doc)
        assert r.status_code == 201, r.text
        doc = pair(r)
    # Then the document still reads, its history is exactly KEPT versions, the current one first
    rows = history(api, w.ada, w.base, "conversation/plan.md")
    assert numbers(rows) == list(range(doc[1], doc[1] - KEPT, -1))
    assert len(version_items("plan.md")) == KEPT
    run_sweep()
    text = current(api, w.ada, w.base, "conversation/plan.md")["content"]
    assert sha(text) == rows[0]["content_sha256"]
    for v in rows:
        assert shown_version(api, w.ada, w.base, "conversation/plan.md", v["lock_version"])["content"] is not None


def test_a_bound_of_one_keeps_only_the_current_version(api: Api) -> None:
    with versions_kept(1):
        w = make_world(api)
        doc = _written(w, 3)
        assert numbers(history(api, w.ada, w.base, "conversation/plan.md")) == [2]
        assert code(version_show(api, w.ada, w.base, "conversation/plan.md", 1)) == (404, "memory_version_not_found")
        assert len(version_items("plan.md")) == 1
        assert pair(api.show(w.ada, w.base, "conversation/plan.md")) == doc
        # And rolling back to that one version prunes its record and keeps its bytes in the new one
        r = rollback(api, w.ada, w.base, "conversation/plan.md", 2, doc)
        assert r.status_code == 201, r.text
        (v,) = history(api, w.ada, w.base, "conversation/plan.md")
        assert (v["lock_version"], v["operation"], v["rolled_back_from"]) == (3, "rollback", 2)
        assert current(api, w.ada, w.base, "conversation/plan.md")["content"] == "v2"
        assert len(version_items("plan.md")) == 1


def test_a_sweep_keeps_an_object_a_young_record_names_though_its_document_is_gone(api: Api) -> None:
    # Given a rollback's version naming version 0's object, and the document then deleted; the rollback's
    # record is made younger than the sweep's grace (as when its commit lands while the sweep's scan runs,
    # which then sees the old pointer row and the new record)
    w = make_world(api)
    doc = _written(w, 2)
    doc = pair(rollback(api, w.ada, w.base, "conversation/plan.md", 0, doc))
    assert api.delete(w.ada, w.base, "conversation/plan.md", doc).status_code == 204
    (record,) = [i for i in version_items("plan.md") if int(i["lock_version"]) == 2]
    _set_recorded_at(record, int(time.time()) + 600)
    # When a sweep with no grace runs
    report = run_sweep()
    # Then the young record and the object it names are kept; the old records and the other object go
    assert sorted(objects().values()) == ["v0"]
    assert report.deleted == 1
    assert (report.versions_young, report.versions_deleted) == (1, 2)
    assert [int(i["lock_version"]) for i in version_items("plan.md")] == [2]


def _set_recorded_at(item: dict[str, Any], when: int) -> None:
    ddb, _ = aws_clients()
    ddb.update_item(
        TableName=settings().table_name,
        Key={"pk": {"S": item["pk"]}, "sk": {"S": item["sk"]}},
        UpdateExpression="SET recorded_at = :t",
        ExpressionAttributeValues={":t": {"N": str(when)}},
    )
