"""A deleted organization Memory's rows and bytes go with the sweep (issue 13).

`POST /memories/{id}/delete` removes the Memory at once for every reader and leaves its partition
(`ANCHOR#memory#<id>`: file pointers, version records, leases, and the `#META` counter row marked
`deleted_at`) to the sweeper, which deletes every row of it, the `#META` row last, and then the objects
nothing else holds. An object a promoted Memory's file shares survives until that file lets go too.

The sweeper runs in this process against the same embedded moto as the gateway (as in test_sweeper.py),
and the table and bucket are read directly to see what is really gone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests
from agent_memory.store import CACHE, aws_clients
from agent_memory.store.sweeper import SweepReport, sweep_configured

from ..support import Api, Who, code, created, ws_base
from .histories import redact
from .orgmem import Files, pair
from .world import bucket_objects, scan_table

pytestmark = pytest.mark.http


@pytest.fixture
def mems(api: Api) -> Files:
    return Files(api)


def run_sweep(grace: float = 0.0, dry_run: bool = False) -> SweepReport:
    return sweep_configured(grace_seconds=grace, settle_seconds=0, dry_run=dry_run)


def partition(mem: str) -> list[dict[str, Any]]:
    """Every row of a Memory's anchor partition, read straight from the table."""
    return [i for i in scan_table() if i["pk"] == f"ANCHOR#memory#{mem}"]


def held_keys(mem: str) -> set[str]:
    return {str(i["content_key"]) for i in partition(mem) if i.get("content_key")}


def lease(api: Api, who: Who, mem: str, path: str) -> None:
    r = api.post(f"/memories/{mem}/files/lease", who, {"file": {"path": path, "seconds": 60}})
    assert r.status_code == 200, r.text


def busy_memory(api: Api, mems: Files, who: Who, name: str) -> str:
    """A Memory with two files, one of them three versions deep (one a rollback) and leased."""
    mem = mems.made(who, name, files=[{"path": "readme.md", "content": f"{name} readme\n"}])["memory_id"]
    f = mems.written(mems.write(who, mem, "plans/q1.md", f"{name} plan v0\n"))
    f = mems.written(mems.write(who, mem, "plans/q1.md", f"{name} plan v1\n", pair(f)))
    mems.written(mems.rollback(who, mem, "plans/q1.md", 0, pair(f)))
    lease(api, who, mem, "plans/q1.md")
    return str(mem)


def test_a_deleted_memorys_rows_and_bytes_go_with_the_next_sweep_and_nothing_else_does(api: Api, mems: Files) -> None:
    # Given two Memories with files, versions and a lease each, and a workspace document
    ada, ws, _ = api.room()
    gone = busy_memory(api, mems, ada, "gone")
    kept = busy_memory(api, mems, ada, "kept")
    created(api.write(ada, ws_base(ws), "workspace/room.md", "room text\n"))
    rows = partition(gone)
    assert {r["sk"].split("#")[0] for r in rows} == {"", "DOC", "VER", "LEASE"}  # "#META" starts with '#'
    doomed = held_keys(gone)
    assert len(doomed) == 3 and doomed <= set(bucket_objects("content/"))
    kept_rows = partition(kept)

    # When one is deleted
    assert mems.delete_memory(ada, gone).status_code == 204
    # Then it is gone for every reader at once, while its partition waits for the sweeper, marked
    assert code(mems.show(ada, gone)) == (404, "not_found")
    assert code(mems.show_file(ada, gone, "readme.md")) == (404, "not_found")
    (meta,) = [r for r in partition(gone) if r["sk"] == "#META"]
    assert meta["deleted_at"] > 0
    assert len(partition(gone)) == len(rows)

    # When the sweeper runs
    report = run_sweep()

    # Then every row of the deleted Memory's partition is gone, its #META row too, and the objects only it
    # held are gone from the bucket
    assert partition(gone) == []
    assert (report.memories, report.memories_eligible, report.memories_young) == (1, 1, 0)
    assert report.memory_rows_deleted == len(rows)
    assert report.deleted == len(doomed) and report.failed == 0
    objects = bucket_objects("content/")
    assert not doomed & set(objects)
    assert not any(text.startswith("gone ") for text in objects.values())
    # And the other Memory and the workspace are untouched, and read from S3 itself
    assert partition(kept) == kept_rows
    CACHE.clear()
    assert mems.file(ada, kept, "plans/q1.md")["content"] == "kept plan v0\n"
    assert mems.version_show(ada, kept, "plans/q1.md", 1).json()["version"]["content"] == "kept plan v1\n"
    assert api.show(ada, ws_base(ws), "workspace/room.md").json()["memory"]["content"] == "room text\n"
    # And the next sweep finds nothing more to do
    again = run_sweep()
    assert (again.memories, again.memory_rows_deleted, again.deleted) == (0, 0, 0)


def test_a_promoted_copy_keeps_the_bytes_it_shares_with_a_deleted_memory(api: Api, mems: Files) -> None:
    # Given a Memory whose file's version 0 was promoted into a second Memory, and a version 1 since
    ada = api.account()
    src = mems.made(ada, "drafts")["memory_id"]
    f0 = mems.written(mems.write(ada, src, "guide.md", "the shared text\n"))
    mems.written(mems.write(ada, src, "guide.md", "only the draft's\n", pair(f0)))
    copy = mems.promote(ada, {"memory_id": src, "path": "guide.md", "lock_version": 0}, "guide")
    assert copy.status_code == 201, copy.text
    dst = copy.json()["memory"]["memory_id"]
    (shared,) = held_keys(dst)

    # When the source Memory is deleted and swept
    assert mems.delete_memory(ada, src).status_code == 204
    report = run_sweep()

    # Then its rows are gone and so is the object only it held, but the promoted file's object stays
    assert partition(src) == [] and report.memory_rows_deleted > 0
    assert report.deleted == 1
    assert bucket_objects("content/") == {shared: "the shared text\n"}
    # And the promoted Memory reads it, from S3 itself, its history included
    CACHE.clear()
    assert mems.file(ada, dst, "guide.md")["content"] == "the shared text\n"
    assert mems.version_show(ada, dst, "guide.md", 0).json()["version"]["content"] == "the shared text\n"
    # And once the promoted Memory is deleted too, the bytes go
    assert mems.delete_memory(ada, dst).status_code == 204
    assert run_sweep().deleted == 1
    assert bucket_objects("content/") == {} and partition(dst) == []


def test_the_bytes_a_promoted_memory_shares_with_a_workspace_go_once_neither_holds_them(api: Api, mems: Files) -> None:
    # Given two workspace documents, each promoted into a Memory, then rewritten
    ada, ws, _ = api.room()
    docs = {}
    for name in ("kept", "redacted"):
        d0 = created(api.write(ada, ws_base(ws), f"workspace/{name}.md", f"{name} text\n"))
        r = mems.promote(ada, {"workspace_public_id": ws, "path": f"workspace/{name}.md", "lock_version": 0}, name)
        assert r.status_code == 201, r.text
        docs[name] = (
            r.json()["memory"]["memory_id"],
            created(api.write(ada, ws_base(ws), f"workspace/{name}.md", "new\n", d0)),
        )
    # And one source version redacted: the workspace lets go of its text, the Memory still holds it
    mem, d1 = docs["redacted"]
    assert redact(api, ada, ws_base(ws), "workspace/redacted.md", 0, d1).status_code == 200
    assert "redacted text\n" in bucket_objects("content/").values()

    # When both Memories are deleted and swept
    for mem, _ in docs.values():
        assert mems.delete_memory(ada, mem).status_code == 204
    run_sweep()

    # Then the redacted version's bytes are gone (nothing holds them any more), while the workspace's
    # history still holds the other's
    texts = sorted(bucket_objects("content/").values())
    assert texts == ["kept text\n", "new\n", "new\n"]
    shown = api.post(f"{ws_base(ws)}/versions/show", ada, {"memory": {"path": "workspace/kept.md", "lock_version": 0}})
    assert shown.json()["version"]["content"] == "kept text\n"


def test_a_freshly_deleted_memory_waits_out_the_grace_and_a_dry_run_removes_nothing(api: Api, mems: Files) -> None:
    ada = api.account()
    mem = busy_memory(api, mems, ada, "gone")
    assert mems.delete_memory(ada, mem).status_code == 204
    rows, objects = partition(mem), bucket_objects("content/")

    # When a sweep runs with a grace longer than the deletion's age, nothing of it is touched
    young = run_sweep(grace=600)
    assert (young.memories, young.memories_young, young.memories_eligible, young.memory_rows_deleted) == (1, 1, 0, 0)
    assert young.deleted == 0
    assert (partition(mem), bucket_objects("content/")) == (rows, objects)
    # And a dry run names what would go and removes nothing
    dry = run_sweep(dry_run=True)
    assert (dry.memories_eligible, dry.memory_rows_deleted, dry.eligible, dry.deleted) == (1, 0, 3, 0)
    assert (partition(mem), bucket_objects("content/")) == (rows, objects)
    # And a sweep past the grace removes it
    done = run_sweep()
    assert (done.memory_rows_deleted, done.deleted) == (len(rows), 3)
    assert partition(mem) == [] and bucket_objects("content/") == {}


@contextmanager
def hook(event: str, fn: Any) -> Iterator[None]:
    ddb, _ = aws_clients()
    ddb.meta.events.register(event, fn, unique_id=f"test-memory-sweep-{event}")
    try:
        yield
    finally:
        ddb.meta.events.unregister(event, unique_id=f"test-memory-sweep-{event}")


def test_a_sweep_stopped_half_way_leaves_the_mark_and_the_next_one_finishes(api: Api, mems: Files) -> None:
    ada = api.account()
    mem = busy_memory(api, mems, ada, "gone")
    assert mems.delete_memory(ada, mem).status_code == 204
    rows, objects = partition(mem), bucket_objects("content/")
    deletes: list[str] = []

    def fail_third(params: dict[str, Any], **_: Any) -> None:
        deletes.append(params["Key"]["sk"]["S"])
        if len(deletes) == 3:
            raise RuntimeError("the sweep's function timed out")

    # When a sweep stops after two of the partition's rows
    with hook("before-parameter-build.dynamodb.DeleteItem", fail_third), pytest.raises(RuntimeError):
        run_sweep()

    # Then the #META mark is still there (it goes last), and no object was deleted (rows go first)
    left = partition(mem)
    assert len(left) == len(rows) - 2 and "#META" not in deletes
    assert [r["sk"] for r in left if r["sk"] == "#META"] == ["#META"]
    assert bucket_objects("content/") == objects
    # And the next sweep finds the mark and finishes
    report = run_sweep()
    assert (report.memory_rows_deleted, report.deleted) == (len(rows) - 2, 3)
    assert partition(mem) == [] and bucket_objects("content/") == {}


def _writes_file(params: dict[str, Any], path: str) -> bool:
    return any(
        op.get("Put", {}).get("Item", {}).get("sk", {}).get("S") == f"DOC#{path}" for op in params["TransactItems"]
    )


def test_a_write_in_flight_when_its_memory_is_deleted_lands_nothing(api: Api, mems: Files) -> None:
    # Given a Memory, and a write to it whose request has read the Memory and is about to commit
    ada = api.account()
    mem = mems.made(ada, "gone", files=[{"path": "readme.md", "content": "readme\n"}])["memory_id"]
    about_to_commit, deleted = threading.Event(), threading.Event()

    def hold(params: dict[str, Any], **_: Any) -> None:
        if _writes_file(params, "late.md"):
            about_to_commit.set()
            assert deleted.wait(10)

    answers: dict[str, requests.Response] = {}
    with hook("before-parameter-build.dynamodb.TransactWriteItems", hold):
        writer = threading.Thread(
            target=lambda: answers.setdefault(
                "r", Files(Api(api.url, api.operator_key)).write(ada, mem, "late.md", "written too late\n")
            )
        )
        writer.start()
        assert about_to_commit.wait(10)
        # When the Memory is deleted meanwhile
        assert mems.delete_memory(ada, mem).status_code == 204
        deleted.set()
        writer.join(20)

    # Then the write is refused: the marked #META row refuses every commit into the partition
    assert code(answers["r"]) == (404, "not_found")
    assert not any(r["sk"] == "DOC#late.md" for r in partition(mem))
    # And its stored object, like the Memory's own, goes with the sweep
    assert "written too late\n" in bucket_objects("content/").values()
    report = run_sweep()
    assert report.deleted == 2
    assert partition(mem) == [] and bucket_objects("content/") == {}
