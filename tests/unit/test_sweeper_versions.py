"""The sweeper and version records: orphaned history rows go, and so does the content only they held.

Rows and objects are written straight to an in-process moto table and bucket (the `store` fixture), and
every test looks at the table and the bucket themselves after the sweep, not only at its report. The
sweep's clock runs an hour ahead of the objects' LastModified, so every object is past the grace and only
a version record's recorded_at decides whether it is young.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from agent_memory.core.model import Anchor, Author, Document, Version
from agent_memory.store import DynamoStore
from agent_memory.store import kinds as store_kinds
from agent_memory.store.keys import anchor_pk, version_prefix
from agent_memory.store.sweeper import SweepReport, sweep, sweep_configured

ANCHOR = Anchor("conversation", "0199aaaa-0000-7000-8000-000000000001")
ADA = Author(kind="human", public_id="0199aaaa-0000-7000-8000-0000000000ad", name="ada")
GRACE = 900.0
# The sweep runs an hour after the rows and objects were written...
SWEPT_AT = time.time() + 3600
# ...so a record from a minute before the setup is long past the grace, and one from the sweep's own start is young.
OLD = int(SWEPT_AT - 3600 - 60)
YOUNG = int(SWEPT_AT)
P = "0199aaaa-0000-7000-8000-00000000000a"
Q = "0199aaaa-0000-7000-8000-00000000000b"


def run(store: DynamoStore, *, versions_kept: int = 100, dry_run: bool = False) -> SweepReport:
    def no_sleep(seconds: float) -> None:
        raise AssertionError("a sweep with no settle time must not wait")

    return sweep(
        store.ddb,
        store.s3,
        store.table,
        store.bucket,
        grace_seconds=GRACE,
        settle_seconds=0,
        versions_kept=versions_kept,
        dry_run=dry_run,
        clock=lambda: SWEPT_AT,
        sleep=no_sleep,
    )


def content(store: DynamoStore, public_id: str, lock_version: int) -> str:
    """A content object of its own for one version."""
    key = f"content/{public_id}/{lock_version}-{time.monotonic_ns()}"
    store.s3.put_object(Bucket=store.bucket, Key=key, Body=f"{public_id} v{lock_version}".encode())
    return key


def pointer(store: DynamoStore, rest: str, public_id: str, lock_version: int, content_key: str) -> None:
    doc = Document(
        ANCHOR, rest, public_id, lock_version, 1, "ab" * 32, None, "2026-01-01T00:00:00.000Z", content_key, ADA
    )
    store.ddb.put_item(TableName=store.table, Item=store_kinds.DOCUMENT.item(doc))


def record(
    store: DynamoStore,
    rest: str,
    public_id: str,
    lock_version: int,
    *,
    recorded_at: int = OLD,
    redacted: bool = False,
    content_key: str | None = None,
) -> str | None:
    """A version record (with an object of its own unless redacted or given one); its content key."""
    if content_key is None and not redacted:
        content_key = content(store, public_id, lock_version)
    v = Version(
        ANCHOR,
        rest,
        public_id,
        lock_version,
        1,
        "ab" * 32,
        None,
        "2026-01-01T00:00:00.000Z",
        content_key,
        ADA,
        "write",
        recorded_at,
        redacted_at="2026-01-02T00:00:00.000Z" if redacted else None,
    )
    store.ddb.put_item(TableName=store.table, Item=store_kinds.VERSION.item(v))
    return content_key


def history(store: DynamoStore, rest: str) -> dict[int, str]:
    """lock_version -> public_id of every version record stored for `rest`, read from the table."""
    resp = store.ddb.query(
        TableName=store.table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues={":pk": {"S": anchor_pk(ANCHOR)}, ":prefix": {"S": version_prefix(rest)}},
        ConsistentRead=True,
    )
    return {int(it["lock_version"]["N"]): it["public_id"]["S"] for it in resp["Items"]}


def bucket(store: DynamoStore) -> set[str]:
    out: set[str] = set()
    for page in store.s3.get_paginator("list_objects_v2").paginate(Bucket=store.bucket, Prefix="content/"):
        out.update(obj["Key"] for obj in page.get("Contents", []))
    return out


def keys_of(*maybe: str | None) -> set[str]:
    return {k for k in maybe if k is not None}


# ---- orphans go ----------------------------------------------------------------------------------------


def test_a_deleted_documents_records_and_their_content_are_removed(store: DynamoStore) -> None:
    # Given a deleted document's three old records, and a live document beside it
    gone = [record(store, "gone.md", P, n) for n in range(3)]
    kept = record(store, "kept.md", Q, 0)
    assert kept is not None
    pointer(store, "kept.md", Q, 0, kept)

    # When the sweep runs
    report = run(store)

    # Then the deleted document's records are gone from the table, and their objects from the bucket
    assert history(store, "gone.md") == {}
    assert not bucket(store) & keys_of(*gone)
    assert bucket(store) == {kept}
    # And the live document keeps its record
    assert history(store, "kept.md") == {0: Q}
    assert (report.versions, report.versions_live, report.versions_deleted) == (4, 1, 3)
    assert report.deleted == 3 and report.versions_kept_by_race == 0


def test_a_document_recreated_at_its_path_keeps_its_new_records_and_loses_the_old_ones_above_them(
    store: DynamoStore,
) -> None:
    # Given a document P that reached version 4 and was deleted...
    old = [record(store, "plan.md", P, n) for n in range(5)]
    # ...and Q, recreated at the same path, whose versions 0 and 1 wrote over P's records
    new = [record(store, "plan.md", Q, n) for n in range(2)]
    assert new[1] is not None
    pointer(store, "plan.md", Q, 1, new[1])
    assert history(store, "plan.md") == {0: Q, 1: Q, 2: P, 3: P, 4: P}

    # When the sweep runs
    report = run(store)

    # Then only Q's records are left, and only Q's content
    assert history(store, "plan.md") == {0: Q, 1: Q}
    assert bucket(store) == keys_of(*new)
    assert not bucket(store) & keys_of(*old)
    assert (report.versions_live, report.versions_deleted) == (2, 3)


def test_records_past_the_retention_bound_go_and_the_newest_k_stay_with_their_content(store: DynamoStore) -> None:
    # Given a document at version 5 with all six of its records, and a bound of 3
    made = [record(store, "plan.md", P, n) for n in range(6)]
    assert made[5] is not None
    pointer(store, "plan.md", P, 5, made[5])

    # When the sweep keeps 3 versions
    report = run(store, versions_kept=3)

    # Then versions 3..5 stay, with their objects, and 0..2 are gone with theirs
    assert history(store, "plan.md") == {3: P, 4: P, 5: P}
    assert bucket(store) == keys_of(*made[3:])
    assert (report.versions, report.versions_live, report.versions_deleted, report.versions_kept) == (6, 3, 3, 3)


def test_a_redacted_record_of_a_deleted_document_is_removed(store: DynamoStore) -> None:
    # Given a deleted document's redacted record (no content key) and its unredacted one
    assert record(store, "gone.md", P, 0, redacted=True) is None
    other = record(store, "gone.md", P, 1)

    # When the sweep runs
    report = run(store)

    # Then both records are gone, and so is the one object they held
    assert history(store, "gone.md") == {}
    assert other is not None and bucket(store) == set()
    assert report.versions_deleted == 2 and report.deleted == 1


def test_a_record_within_the_bound_is_the_documents_only_if_its_public_id_is(store: DynamoStore) -> None:
    # Given Q at version 2 at a path where a deleted document P left its version 1 (Q's own record of
    # version 1 was never written over it: say Q was written before it kept a history)
    mine = record(store, "plan.md", Q, 2)
    stale = record(store, "plan.md", P, 1)
    assert mine is not None and stale is not None
    pointer(store, "plan.md", Q, 2, mine)

    # When the sweep runs
    report = run(store)

    # Then P's record goes with its content, though its number is within Q's bound
    assert history(store, "plan.md") == {2: Q}
    assert bucket(store) == {mine}
    assert (report.versions_live, report.versions_deleted) == (1, 1)


def test_a_record_without_recorded_at_counts_as_old_and_goes(store: DynamoStore) -> None:
    # Given a deleted document's record stored without recorded_at
    key = content(store, P, 0)
    v = Version(ANCHOR, "gone.md", P, 0, 1, "ab" * 32, None, "2026-01-01T00:00:00.000Z", key, ADA, "write", 0)
    item = store_kinds.VERSION.item(v)
    del item["recorded_at"]
    store.ddb.put_item(TableName=store.table, Item=item)

    # When the sweep runs
    report = run(store)

    # Then it is no younger than the epoch: the record and its content are gone
    assert history(store, "gone.md") == {}
    assert bucket(store) == set()
    assert (report.versions_young, report.versions_deleted, report.versions_kept_by_race) == (0, 1, 0)


# ---- what stays -------------------------------------------------------------------------------------------


def test_a_young_orphan_is_kept_and_still_protects_its_content(store: DynamoStore) -> None:
    # Given a fork's record written as the sweep starts, its pointer row not yet committed
    young = record(store, "forked.md", P, 3, recorded_at=YOUNG)
    # And one that old, its fork long since lost
    lost = record(store, "lost.md", P, 3)

    # When the sweep runs with a grace of 15 minutes
    report = run(store)

    # Then the young record and its object stay, and only the old orphan goes
    assert history(store, "forked.md") == {3: P}
    assert history(store, "lost.md") == {}
    assert young is not None and lost is not None
    assert bucket(store) == {young}
    assert (report.versions_young, report.versions_deleted) == (1, 1)


def test_a_live_records_content_stays_after_the_pointer_moved_on_from_it(store: DynamoStore) -> None:
    # Given a document at version 2 whose records hold versions 0..2, and an object nothing holds
    made = [record(store, "plan.md", P, n) for n in range(3)]
    assert made[2] is not None
    pointer(store, "plan.md", P, 2, made[2])
    stray = content(store, P, 99)

    # When the sweep runs
    report = run(store)

    # Then the older versions' content stays: their records still offer them
    assert bucket(store) == keys_of(*made)
    assert history(store, "plan.md") == {0: P, 1: P, 2: P}
    # And the stray object goes
    assert stray not in bucket(store) and report.deleted == 1
    assert report.versions_deleted == 0


def test_a_record_written_over_before_its_delete_lands_is_kept_and_counted(store: DynamoStore) -> None:
    # Given a deleted document's old record...
    old = record(store, "plan.md", P, 0)
    newer: list[str | None] = []

    # ...that a recreate at the same path writes over just before the sweep's delete is sent
    def recreate(**_: Any) -> None:
        if not newer:
            newer.append(record(store, "plan.md", Q, 0, recorded_at=YOUNG))

    with hooked(store, "before-call.dynamodb.DeleteItem", recreate):
        report = run(store)

    # Then the new record stays, with its content
    assert history(store, "plan.md") == {0: Q}
    assert newer[0] is not None and newer[0] in bucket(store)
    # And the content the overwritten row held waits for a sweep that sees the row as it is now
    assert old is not None and old in bucket(store)
    assert (report.versions_deleted, report.versions_kept_by_race) == (0, 1)


def test_a_dry_run_deletes_no_record_and_no_object(store: DynamoStore) -> None:
    # Given a deleted document's records and a document past its bound
    gone = [record(store, "gone.md", P, n) for n in range(2)]
    made = [record(store, "plan.md", Q, n) for n in range(3)]
    assert made[2] is not None
    pointer(store, "plan.md", Q, 2, made[2])
    before = bucket(store)

    # When a dry run keeps 1 version
    report = run(store, versions_kept=1, dry_run=True)

    # Then every record and every object is still there
    assert history(store, "gone.md") == {0: P, 1: P}
    assert history(store, "plan.md") == {0: Q, 1: Q, 2: Q}
    assert bucket(store) == before
    # And the report says what a real sweep would remove
    assert (report.versions_eligible, report.versions_deleted) == (4, 0)
    assert (report.eligible, report.deleted) == (len(keys_of(*gone, *made[:2])), 0)


def test_the_configured_sweep_keeps_as_many_versions_as_the_deployment_says(
    store: DynamoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a document at version 4 with all five records, and a deployment that keeps 2
    made = [record(store, "plan.md", P, n) for n in range(5)]
    assert made[4] is not None
    pointer(store, "plan.md", P, 4, made[4])
    monkeypatch.setenv("AGENT_MEMORY_VERSIONS_KEPT", "2")

    # When the configured sweep runs (no grace: every object here is older than its start)
    report = sweep_configured(grace_seconds=0, settle_seconds=0)

    # Then it keeps the two newest records and their content
    assert report.versions_kept == 2
    assert history(store, "plan.md") == {3: P, 4: P}
    assert bucket(store) == keys_of(*made[3:])


def test_a_bound_below_one_is_refused_before_anything_is_read(store: DynamoStore) -> None:
    kept = record(store, "gone.md", P, 0)
    with pytest.raises(ValueError, match="versions_kept"):
        run(store, versions_kept=0)
    assert history(store, "gone.md") == {0: P} and bucket(store) == {kept}


@contextmanager
def hooked(store: DynamoStore, event: str, fn: Callable[..., None]) -> Iterator[None]:
    """A botocore event handler on the store's DynamoDB client for the length of a `with`."""
    store.ddb.meta.events.register(event, fn, unique_id="test-sweeper-versions")
    try:
        yield
    finally:
        store.ddb.meta.events.unregister(event, unique_id="test-sweeper-versions")
