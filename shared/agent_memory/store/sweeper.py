"""The content sweeper: removes S3 content versions that no row references any more.

A write stores its immutable version in S3 before the pointer row commits, so deletes, replaces and
refused commits all leave versions behind that nothing points at. A sweep removes them without ever
removing one that a live pointer still needs, even while writes and forks commit around it:

1. Note the start time, then list content/ in S3. An object stored after the listing is never a candidate.
2. Scan the table (strongly consistent) for every row's content_key. A pointer that was committed
   before the scan reached its item is seen.
3. Keep every object younger than the grace period: it may be a write's version whose pointer had not
   committed yet when the scan passed. A write commits within seconds of storing its version, so a
   grace of minutes covers it; S3's LastModified has one-second precision, which the grace absorbs.
4. Wait `settle` seconds, longer than any fork request can run, then read the fork log from `settle`
   seconds before the start time on (the slack also absorbs clock skew between functions). A fork
   copies pointers to versions of any age; the log names what each fork copied, so a copy the scan
   missed (its parent's row deleted before the scan got there, the child's written after the scan
   passed) still keeps its version.
5. Delete the rest, up to 1000 keys per request.

Reading every content_key is one Scan of the whole table: fine at this service's size, and the first
thing to replace in a larger deployment (docs/decisions.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from .forklog import fork_log_partition, fork_log_time

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


@dataclass(slots=True)
class SweepReport:
    """What one sweep saw and did; every count is of S3 keys."""

    listed: int = 0
    referenced: int = 0
    fork_logged: int = 0
    young: int = 0
    eligible: int = 0
    deleted: int = 0
    failed: int = 0
    dry_run: bool = False
    grace_seconds: float = DEFAULT_GRACE_SECONDS
    settle_seconds: float = DEFAULT_SETTLE_SECONDS
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 3)
        return out


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


def referenced_keys(ddb: Any, table: str) -> set[str]:
    """Every content_key any row holds: pointer rows today, and any later row kind that keeps a version."""
    keys: set[str] = set()
    for page in _pages(
        ddb.scan,
        TableName=table,
        ProjectionExpression="#ck",
        FilterExpression="attribute_exists(#ck)",
        ExpressionAttributeNames={"#ck": "content_key"},
        ConsistentRead=True,
    ):
        keys.update(item["content_key"]["S"] for item in page.get("Items", []))
    return keys


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
    dry_run: bool = False,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> SweepReport:
    """One sweep. The order of the steps is what makes it safe: see the module docstring."""
    if grace_seconds < 0 or settle_seconds < 0:
        raise ValueError("grace_seconds and settle_seconds must be >= 0")
    report = SweepReport(dry_run=dry_run, grace_seconds=grace_seconds, settle_seconds=settle_seconds)
    started = clock()
    objects = _listed(s3, bucket)
    referenced = referenced_keys(ddb, table)
    if settle_seconds:
        sleep(settle_seconds)
    forked = fork_logged_keys(ddb, table, started - settle_seconds, clock())
    cutoff = started - grace_seconds
    unreferenced = {k: m for k, m in objects.items() if k not in referenced and k not in forked}
    doomed = sorted(k for k, m in unreferenced.items() if m < cutoff)
    report.listed = len(objects)
    report.referenced = len(referenced)
    report.fork_logged = len(forked)
    report.young = len(unreferenced) - len(doomed)
    report.eligible = len(doomed)
    if doomed and not dry_run:
        report.failed = _delete(s3, bucket, doomed)
    report.deleted = 0 if dry_run else len(doomed) - report.failed
    report.seconds = clock() - started
    return report


def sweep_configured(*, grace_seconds: float, settle_seconds: float, dry_run: bool = False) -> SweepReport:
    """One sweep of the table and bucket the settings name, through the process's shared clients."""
    from ..settings import settings
    from . import aws_clients

    s = settings()
    ddb, s3 = aws_clients()
    return sweep(
        ddb,
        s3,
        s.table_name,
        s.bucket_name,
        grace_seconds=grace_seconds,
        settle_seconds=settle_seconds,
        dry_run=dry_run,
    )


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """The scheduled Lambda: one sweep with the deployment's settings, its report logged and returned."""
    from .. import observability

    observability.bind_lambda_context(context)
    report = sweep_configured(
        grace_seconds=float(os.environ.get("SWEEP_GRACE_SECONDS", DEFAULT_GRACE_SECONDS)),
        settle_seconds=float(os.environ.get("SWEEP_SETTLE_SECONDS", DEFAULT_SETTLE_SECONDS)),
    ).as_json()
    observability.logger().info("sweep", extra={"sweep": report})
    return report
