"""The content sweeper: removes S3 content versions that no row references any more, the version
records that no document keeps any more, and the rows of deleted organization Memories and conversations.

A write stores its immutable version in S3 before the pointer row commits, so deletes, replaces and
refused commits all leave versions behind that nothing points at. A document's history rows (`VER#`,
next to its `DOC#` pointer) hold content keys too, and outlive what they record: a delete removes only
the pointer, a recreate at the same path writes its own history under a new public_id over the old one
from version 0 up (so the old rows above it remain), a lowered retention leaves rows past the bound, and
a fork that writes its child's records but never its pointers leaves them ownerless. A sweep removes
those rows and then the versions nothing holds, without ever removing a row or a version that a live
document still needs, even while writes and forks commit around it:

1. Note the start time, then list content/ in S3. An object stored after the listing is never a candidate.
2. Scan the table (strongly consistent) for every row's content_key, and every version record's owner
   (public_id), number (lock_version) and recorded_at. A pointer committed before the scan reached its
   item is seen.
3. Sort the version records. One is live while its path's pointer row (same partition, same path hash)
   has its public_id and a lock_version at most K-1 above it (K: versions kept, the current one
   included): that is the history a reader can still page through or roll back to. One is young while
   it was recorded within the grace period: the scan may have read its pointer before the commit that
   wrote both (so the row looks newer than its document), or it is a fork's record whose pointer
   transaction has yet to run. Every other record is an orphan, and nothing will ever own it again:
   lock_versions only grow and a public_id is never reused.
4. Delete each orphan row, conditioned on the owner, number and recorded_at it was read with: a recreate
   at the same path may have written over it since the scan, and that newer row must stay. A row kept by
   that condition keeps its content this sweep too, and the next sweep judges what it holds now.
   Rows go before objects, so no record is ever left naming content that is gone.
   A deleted organization Memory leaves its whole partition (`ANCHOR#memory#<id>`: pointers, records,
   leases) behind its `#META` row, which the deletion marks `deleted_at`. Every commit of a Memory's files
   is conditioned on that row existing unmarked, so no row lands in a marked partition afterwards. Once
   the mark is older than the grace period (a promote that read one of its versions before the deletion
   has committed its copy by then, so the scan sees the copy's pointer), every row of the partition is
   deleted, the `#META` row last: a sweep stopped half way leaves the mark, and the next one finishes.
   A deleted conversation is swept the same way: its deletion marks its anchor's `#META` row
   (`ANCHOR#conversation#<id>`) in the transaction that tombstones its `CONV` row, and every commit into
   that anchor moves the conversation row on the condition that it is not tombstoned, so nothing lands
   there afterwards. Every item of the anchor goes, whatever its kind (pointers, records, any later kind
   such as store entries), and so does every item of the conversation's own `CONV#<id>` partition but the
   tombstone itself, which stays: the conversation reads as absent, never as recreatable. A fork's rows
   are under the fork's own anchor and hold the content keys it shares with its parent, so those objects
   stay referenced (and a fork in flight during the sweep is in the fork log, step 7).
5. The references are then every content_key of a pointer (or any other row kind that keeps one) and of
   every live or young record, a swept Memory's rows left out; an orphan's content is referenced only if
   something else holds it (a promoted Memory's file holds the object of the version it copied).
6. Keep every object younger than the grace period: it may be a write's version whose pointer had not
   committed yet when the scan passed. A write commits within seconds of storing its version, so a
   grace of minutes covers it; S3's LastModified has one-second precision, which the grace absorbs.
7. Wait `settle` seconds, longer than any fork request can run, then read the fork log from `settle`
   seconds before the start time on (the slack also absorbs clock skew between functions). A fork
   copies pointers to versions of any age; the log names what each fork copied, so a copy the scan
   missed (its parent's row deleted before the scan got there, the child's written after the scan
   passed) still keeps its version.
8. Delete the rest, up to 1000 keys per request.

K must be the value the service prunes with (AGENT_MEMORY_VERSIONS_KEPT, read by both): a sweeper told a
smaller K than the service would delete history the service still offers.

Reading every content_key is one Scan of the whole table: fine at this service's size, and the first
thing to replace in a larger deployment (docs/decisions.md). Orphan rows are deleted one request each:
they are rare after the first sweep, since a commit prunes its own row past the bound. A deleted Memory's
rows go one request each too (the function may only DeleteItem): a sweep that runs out of time leaves the
partition's `#META` mark, and the next sweep finishes it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, field
from typing import Any

from botocore.exceptions import ClientError

from agent_memory.core.clock import now
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import DEFAULT_VERSIONS_KEPT, Anchor
from agent_memory.store import kinds
from agent_memory.store.forklog import fork_log_partition, fork_log_time
from agent_memory.store.items import unmarshal
from agent_memory.store.keys import anchor_pk, path_hash

# The keys the sweep reads, by the registry's shapes (store/kinds.py).
META = kinds.META.sk
VERSION = kinds.VERSION.shape.sk_prefix
DOC = kinds.DOCUMENT.shape.sk_prefix
CONVERSATION_ANCHOR = anchor_pk(Anchor("conversation", ""))
# The tombstone a deleted conversation leaves in its own partition: kept, so it never reads as new.
TOMBSTONE_SK = kinds.CONVERSATION_ANY.sk

CONTENT_PREFIX = "content/"
DEFAULT_GRACE_SECONDS = 15 * 60
# The shortest grace an operator may ask for without --force. A write stores its content and then commits
# its pointer inside one route Lambda, whose timeout is 10 s; 60 s covers that window six times over, plus
# clock skew and S3's one-second LastModified. A younger orphan may be a write that has not committed yet,
# and sweeping it would leave that write's pointer with no content (memory_content_missing).
MIN_SAFE_GRACE_SECONDS = 60
# A fork request runs inside a route Lambda whose timeout is 10 s; 30 s leaves room for clock skew.
DEFAULT_SETTLE_SECONDS = 30
_DELETE_BATCH = 1000
# The attributes a version record's delete is conditioned on, by the names its condition spells them.
_RECORD_IDENTITY = {"#pid": "public_id", "#lv": "lock_version", "#ra": "recorded_at"}


@dataclass(slots=True)
class SweepReport:
    """What one sweep saw and did: the counts named `versions*` are of version records (rows) outside the
    deleted Memories, `memories*` of deleted Memories (their marked `#META` rows) and `memory_rows_deleted`
    of the rows removed with them (`#META` included), every other count of S3 keys; `versions_kept` is the
    K the sweep judged records by."""

    listed: int = 0
    referenced: int = 0
    fork_logged: int = 0
    young: int = 0
    eligible: int = 0
    deleted: int = 0
    failed: int = 0
    versions: int = 0
    versions_live: int = 0
    versions_young: int = 0
    # Orphans old enough to delete; a dry run deletes none of them, so this is what it would have removed.
    versions_eligible: int = 0
    versions_deleted: int = 0
    versions_kept_by_race: int = 0
    # Deleted Memories seen, those marked within the grace period (left for a later sweep), those whose rows
    # this sweep removes (a dry run removes none), and how many rows went with them.
    memories: int = 0
    memories_young: int = 0
    memories_eligible: int = 0
    memory_rows_deleted: int = 0
    # The same for deleted conversations (their anchor's marked `#META` rows); the rows counted are the
    # anchor's and those beside the tombstone in the conversation's own partition.
    conversations: int = 0
    conversations_young: int = 0
    conversations_eligible: int = 0
    conversation_rows_deleted: int = 0
    dry_run: bool = False
    grace_seconds: float = DEFAULT_GRACE_SECONDS
    settle_seconds: float = DEFAULT_SETTLE_SECONDS
    versions_kept: int = DEFAULT_VERSIONS_KEPT
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 3)
        return out


@dataclass(frozen=True, slots=True)
class _Record:
    """One version record as the scan read it."""

    pk: str
    sk: str
    path_hash: str
    public_id: str | None
    lock_version: int | None
    recorded_at: float
    content_key: str | None
    # public_id, lock_version and recorded_at exactly as stored (absent ones left out): the delete's condition.
    identity: dict[str, Any]


@dataclass(slots=True)
class _Scanned:
    """The table as one scan saw it."""

    # partition -> content_key of every row in it that is not a version record: pointers, and any later
    # kind that keeps one.
    held_in: dict[str, set[str]] = field(default_factory=dict)
    # (partition, path hash) -> (public_id, lock_version) of each pointer row.
    documents: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    records: list[_Record] = field(default_factory=list)
    # partition -> deleted_at (epoch seconds) of each deleted Memory's marked `#META` row.
    deleted: dict[str, float] = field(default_factory=dict)

    def held(self, leaving: set[str] | frozenset[str] = frozenset()) -> set[str]:
        """The content keys non-record rows hold, outside the partitions `leaving`."""
        return {k for pk, held in self.held_in.items() if pk not in leaving for k in held}


def _listed(s3: Any, bucket: str) -> dict[str, float]:
    """Every content object with its LastModified as epoch seconds."""
    out: dict[str, float] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=CONTENT_PREFIX):
        for obj in page.get("Contents", []):
            out[obj["Key"]] = obj["LastModified"].timestamp()
    return out


def _pages(call: Callable[..., dict[str, Any]], **kwargs: Any) -> Iterator[dict[str, Any]]:
    while True:
        resp = call(**kwargs)
        yield resp
        if "LastEvaluatedKey" not in resp:
            return
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def _number(value: Any) -> int | None:
    return value if type(value) is int else None


def _record(item: dict[str, Any]) -> _Record:
    it = unmarshal(item)
    sk: str = it["sk"]
    # A key no commit spells has no path hash: no pointer row can own it.
    parts = kinds.VERSION.shape.parse(it["pk"], sk)
    path_hash = parts["path_hash"] if parts is not None and parts["lock_version"].isdigit() else ""
    recorded_at = it.get("recorded_at")
    public_id = it.get("public_id")
    return _Record(
        pk=it["pk"],
        sk=sk,
        path_hash=path_hash,
        public_id=public_id if isinstance(public_id, str) else None,
        lock_version=_number(it.get("lock_version")),
        recorded_at=float(recorded_at) if isinstance(recorded_at, int | float) else 0.0,
        content_key=it.get("content_key"),
        identity={name: item[attr] for name, attr in _RECORD_IDENTITY.items() if attr in item},
    )


def _scan(ddb: Any, table: str) -> _Scanned:
    """One strongly consistent Scan: every row that holds a content key, and every version record."""
    out = _Scanned()
    for page in _pages(
        ddb.scan,
        TableName=table,
        ProjectionExpression="#pk, #sk, #ck, #pid, #lv, #ra, #del",
        # A redacted record holds no content_key and must still be seen, to be deleted once orphaned; a
        # deleted Memory's `#META` row holds none either.
        FilterExpression=(
            "attribute_exists(#ck) OR begins_with(#sk, :ver) OR (#sk = :meta AND attribute_exists(#del))"
        ),
        ExpressionAttributeNames={
            "#pk": "pk",
            "#sk": "sk",
            "#ck": "content_key",
            "#del": "deleted_at",
            **_RECORD_IDENTITY,
        },
        ExpressionAttributeValues={":ver": {"S": VERSION}, ":meta": {"S": META}},
        ConsistentRead=True,
    ):
        for item in page.get("Items", []):
            sk = item["sk"]["S"]
            if sk.startswith(VERSION):
                out.records.append(_record(item))
                continue
            if sk == META and "deleted_at" in item:
                deleted_at = unmarshal(item).get("deleted_at")
                out.deleted[item["pk"]["S"]] = float(deleted_at) if isinstance(deleted_at, int | float) else 0.0
            if "content_key" in item:
                out.held_in.setdefault(item["pk"]["S"], set()).add(item["content_key"]["S"])
            if sk.startswith(DOC):
                it = unmarshal(item)
                public_id, lock_version = it.get("public_id"), _number(it.get("lock_version"))
                if isinstance(public_id, str) and lock_version is not None:
                    parts = kinds.DOCUMENT.shape.parse(it["pk"], sk)
                    if parts is not None:
                        out.documents[(it["pk"], path_hash(parts["rest"]))] = (public_id, lock_version)
    return out


def _live(record: _Record, documents: dict[tuple[str, str], tuple[str, int]], versions_kept: int) -> bool:
    """Whether the record is one of the `versions_kept` newest of the document now at its path."""
    doc = documents.get((record.pk, record.path_hash))
    if doc is None or record.lock_version is None or record.public_id != doc[0]:
        return False
    return doc[1] - versions_kept < record.lock_version <= doc[1]


def referenced_keys(ddb: Any, table: str) -> set[str]:
    """Every content_key any row holds, version records (live or not) included."""
    scanned = _scan(ddb, table)
    return scanned.held() | {r.content_key for r in scanned.records if r.content_key is not None}


def fork_logged_keys(ddb: Any, table: str, since: float, until: float) -> set[str]:
    """Content keys copied by forks recorded from `since` on (the log is partitioned by UTC hour)."""
    keys: set[str] = set()
    hour = int(since // 3600) * 3600
    while hour <= until:
        for page in _pages(
            ddb.query,
            TableName=table,
            KeyConditionExpression="#pk = :pk AND #sk >= :since",
            ExpressionAttributeNames={"#pk": "pk", "#sk": "sk", "#cks": "content_keys"},
            ExpressionAttributeValues={":pk": {"S": fork_log_partition(hour)}, ":since": {"S": fork_log_time(since)}},
            ProjectionExpression="#cks",
            ConsistentRead=True,
        ):
            for item in page.get("Items", []):
                keys.update(v["S"] for v in item.get("content_keys", {}).get("L", []))
        hour += 3600
    return keys


def _delete_record(ddb: Any, table: str, record: _Record) -> bool:
    """Delete one orphan record if it is still the row the scan read; False when it was written over."""
    values = {f":{name[1:]}": value for name, value in record.identity.items()}
    condition = " AND ".join(
        f"{name} = :{name[1:]}" if name in record.identity else f"attribute_not_exists({name})"
        for name in _RECORD_IDENTITY
    )
    request: dict[str, Any] = {
        "TableName": table,
        "Key": {"pk": {"S": record.pk}, "sk": {"S": record.sk}},
        "ConditionExpression": condition,
        "ExpressionAttributeNames": dict(_RECORD_IDENTITY),
    }
    if values:
        request["ExpressionAttributeValues"] = values
    try:
        ddb.delete_item(**request)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise
    return True


def _anchor_of(pk: str) -> Anchor:
    parts = kinds.META.shape.parse(pk, META)
    if parts is None:
        raise ValueError(f"not an anchor's partition: {pk!r}")
    return Anchor.from_key(parts["anchor"])


def _delete_partition(ddb: Any, table: str, pk: str, keep: str | None = None) -> int:
    """Delete every row of a deleted Memory's (or conversation's) partition, its `#META` row last, the row
    whose sort key is `keep` left in place; how many rows went."""
    rows: list[dict[str, Any]] = []
    for page in _pages(
        ddb.query,
        TableName=table,
        KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={"#pk": "pk", "#sk": "sk"},
        ExpressionAttributeValues={":pk": {"S": pk}},
        ProjectionExpression="#pk, #sk",
        ConsistentRead=True,
    ):
        rows += page.get("Items", [])
    rows = [item for item in rows if item["sk"]["S"] != keep]
    rows.sort(key=lambda item: item["sk"]["S"] == META)
    for item in rows:
        ddb.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})
    return len(rows)


def _delete(s3: Any, bucket: str, keys: list[str]) -> int:
    failed = 0
    for i in range(0, len(keys), _DELETE_BATCH):
        chunk = keys[i : i + _DELETE_BATCH]
        resp = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True})
        failed += len(resp.get("Errors", []))
    return failed


def sweep(
    ddb: Any,
    s3: Any,
    table: str,
    bucket: str,
    *,
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    settle_seconds: float = DEFAULT_SETTLE_SECONDS,
    versions_kept: int = DEFAULT_VERSIONS_KEPT,
    dry_run: bool = False,
    clock: Callable[[], float] = now,
    sleep: Callable[[float], None] = time.sleep,
    progress: Callable[[str], None] | None = None,
) -> SweepReport:
    """One sweep. The order of the steps is what makes it safe: see the module docstring. `progress` is told
    each step as a sentence (the CLI prints them, so a sweep is never a silent wait)."""
    say = progress or (lambda _: None)
    if grace_seconds < 0 or settle_seconds < 0:
        raise ValueError("grace_seconds and settle_seconds must be >= 0")
    if versions_kept < 1:
        # Below 1 every document's current record would be an orphan.
        raise ValueError("versions_kept must be >= 1")
    report = SweepReport(
        dry_run=dry_run, grace_seconds=grace_seconds, settle_seconds=settle_seconds, versions_kept=versions_kept
    )
    started = clock()
    cutoff = started - grace_seconds
    objects = _listed(s3, bucket)
    say(f"listed {len(objects)} content objects")
    scanned = _scan(ddb, table)
    say(
        f"scanned the table: {len(scanned.records)} version records, {len(scanned.deleted)} deleted Memories "
        "and conversations"
    )
    # Deleted Memories marked before the grace period: no commit can land in them any more, and a promote
    # that copied one of their versions has committed its pointer, which the scan has seen.
    swept = {pk for pk, at in scanned.deleted.items() if at <= cutoff}
    conversations = {pk for pk in scanned.deleted if pk.startswith(CONVERSATION_ANCHOR)}
    report.memories = len(scanned.deleted) - len(conversations)
    report.memories_eligible = len(swept - conversations)
    report.memories_young = report.memories - report.memories_eligible
    report.conversations = len(conversations)
    report.conversations_eligible = len(swept & conversations)
    report.conversations_young = report.conversations - report.conversations_eligible
    referenced = scanned.held(swept)
    orphans: list[_Record] = []
    judged = [r for r in scanned.records if r.pk not in swept]
    for record in judged:
        if _live(record, scanned.documents, versions_kept):
            report.versions_live += 1
        elif record.recorded_at > cutoff:
            report.versions_young += 1
        else:
            orphans.append(record)
            continue
        if record.content_key is not None:
            referenced.add(record.content_key)
    report.versions = len(judged)
    report.versions_eligible = len(orphans)
    if not dry_run and (orphans or swept):
        say(f"deleting {len(orphans)} version records and {len(swept)} deleted Memories' and conversations' rows")
    if not dry_run:
        for record in orphans:
            if _delete_record(ddb, table, record):
                report.versions_deleted += 1
                continue
            report.versions_kept_by_race += 1
            # The row holds something else now; its old content waits for a sweep that sees what.
            if record.content_key is not None:
                referenced.add(record.content_key)
        # Rows before objects: once a deleted Memory's rows are gone, what only they held is unreferenced.
        for pk in sorted(swept - conversations):
            report.memory_rows_deleted += _delete_partition(ddb, table, pk)
        for pk in sorted(swept & conversations):
            # The conversation's own partition first, its tombstone kept; the anchor's `#META` mark goes last
            # of all, so a sweep stopped anywhere here is finished by the next one.
            own, _ = kinds.CONVERSATION_ANY.key(_anchor_of(pk).owner_id)
            report.conversation_rows_deleted += _delete_partition(ddb, table, own, keep=TOMBSTONE_SK)
            report.conversation_rows_deleted += _delete_partition(ddb, table, pk)
    if settle_seconds:
        say(f"waiting {settle_seconds:g} s for forks in flight to log what they copy (--settle-seconds)")
        sleep(settle_seconds)
    forked = fork_logged_keys(ddb, table, started - settle_seconds, clock())
    unreferenced = {k: m for k, m in objects.items() if k not in referenced and k not in forked}
    doomed = sorted(k for k, m in unreferenced.items() if m < cutoff)
    report.listed = len(objects)
    report.referenced = len(referenced)
    report.fork_logged = len(forked)
    report.young = len(unreferenced) - len(doomed)
    report.eligible = len(doomed)
    if doomed and not dry_run:
        say(f"deleting {len(doomed)} unreferenced content objects")
        report.failed = _delete(s3, bucket, doomed)
    report.deleted = 0 if dry_run else len(doomed) - report.failed
    report.seconds = clock() - started
    return report


def _versions_kept() -> int:
    """K as the deployment sets it (AGENT_MEMORY_VERSIONS_KEPT), the value the service prunes with."""
    return int(os.environ.get("AGENT_MEMORY_VERSIONS_KEPT") or DEFAULT_VERSIONS_KEPT)


def sweep_configured(
    *,
    grace_seconds: float,
    settle_seconds: float,
    dry_run: bool = False,
    versions_kept: int | None = None,
    progress: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> SweepReport:
    """One sweep of the table and bucket the settings name, through the process's shared clients.

    `versions_kept` defaults to the deployment's setting, not the model's default: both sides must agree.
    """
    from agent_memory.core.settings import settings
    from agent_memory.store import aws_clients

    s = settings()
    ddb, s3 = aws_clients()
    return sweep(
        ddb,
        s3,
        s.table_name,
        s.bucket_name,
        grace_seconds=grace_seconds,
        settle_seconds=settle_seconds,
        versions_kept=_versions_kept() if versions_kept is None else versions_kept,
        dry_run=dry_run,
        progress=progress,
        sleep=sleep,
    )


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """The scheduled Lambda: one sweep with the deployment's settings, its report logged and returned."""
    from agent_memory.core import observability

    observability.bind_lambda_context(context)
    report = sweep_configured(
        grace_seconds=float(os.environ.get("SWEEP_GRACE_SECONDS", DEFAULT_GRACE_SECONDS)),
        settle_seconds=float(os.environ.get("SWEEP_SETTLE_SECONDS", DEFAULT_SETTLE_SECONDS)),
    ).as_json()
    observability.logger().info("sweep", extra={"sweep": report})
    return report
