"""Typed records: their items, the exact-duplicate claims, the MinHash band index, the search postings and
a run's raw lines.

Every change is one request: a single conditional write, or one transaction when it spans items (the
record with its claim, bands and search postings, a supersede with the record it retires) or carries a
keyed request's answer. The write budget's meters are spent just before it, outside it (`Documents.spend`).
A record's postings (`RECTERM#<ws>#<layer>#<term hash>` / `<impact>#<record id>`, one tiny item per
indexed term) are put, and removed, in the commit that writes or deletes the record, conditioned as the
record is: they never name a record that is gone, nor keep a term of a text the record no longer holds. A
refused claim is not an error to the caller: it names the record that already holds the text, which the
service then counts a mention of (`DuplicateClaimed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from agent_memory.api.errors import ApiError
from agent_memory.core import clock
from agent_memory.core.model import Author, Quarantine, RunLine, TypedRecord, WriteBudget
from agent_memory.core.ports import DuplicateClaimed, Posting, RecordMoved
from agent_memory.store import keys, kinds
from agent_memory.store.commit import PACING, Refusals, Step, attempt, busy, keyed, read, transact
from agent_memory.store.content import pool
from agent_memory.store.documents import Documents
from agent_memory.store.items import attribute, author_attributes, record_searched_row, unmarshal

# A search without the index reads at most this many records of one layer of a workspace (docs).
MAX_SEARCHED = 50_000
# BatchWriteItem's limit of items per request, and BatchGetItem's of keys.
_WRITE_BATCH = 25
_GET_BATCH = 100
# What a search filters and ranks by: a projection, since parsing every attribute of every record is most
# of a search's cost (botocore's and ours); the page it answers is then read whole by id.
_SEARCHED = "sk, s, superseded_by, quarantine, quarantine_rules, ruleset"
# How long an exact-duplicate claim outlives its hour before TTL may remove it (the condition reads
# `claimed_until`, so TTL's lag never matters).
_CLAIM_TTL_SLACK = 3600
_RUN_LINES = 1000


def _stale(what: str) -> ApiError:
    return ApiError("stale_object", f"The record changed since you read it ({what}): read it again and retry.")


def _record_refusal(expected: int | None) -> Any:
    def refused(old: dict[str, Any] | None) -> ApiError:
        if old is None:
            return ApiError("not_found", "No record with that id is visible to you.")
        if expected is not None and old.get("lock_version") != expected:
            return _stale(f"it is at lock_version {old.get('lock_version')}, not {expected}")
        if old.get("superseded_by"):
            return _stale(f"it was superseded by {old['superseded_by']}")
        return _stale("it is not in the state this change needs")

    return refused


def _moved(_: dict[str, Any] | None) -> ApiError:
    raise RecordMoved


class Records(Documents):
    """Record items and their indexes (the domain rules are in records.py)."""

    # How many shards each layer of a workspace's records is spread over (an export's cursor names one).
    record_shards: int = keys.RECORD_SHARDS

    # ---- the steps ------------------------------------------------------------------------------------

    def _claim_step(self, rec: TypedRecord, dead: str | None, until: float, now: float) -> Step:
        pk, sk = keys.record_claim(rec.workspace_id, rec.group, rec.content_digest)
        condition = "attribute_not_exists(#pk) OR #until < :now OR #rid = :rid"
        values: dict[str, Any] = {":now": {"N": repr(now)}, ":rid": {"S": rec.public_id}}
        if dead is not None:
            condition += " OR #rid = :dead"
            values[":dead"] = {"S": dead}
        item = {
            "pk": {"S": pk},
            "sk": {"S": sk},
            "record_id": {"S": rec.public_id},
            "claimed_until": {"N": repr(until)},
            "lock_version": {"N": str(rec.lock_version)},
            "expires_at": {"N": str(int(until) + _CLAIM_TTL_SLACK)},
        }
        return (
            "claim",
            {
                "Put": {
                    "TableName": self.table,
                    "Item": item,
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": {"#pk": "pk", "#until": "claimed_until", "#rid": "record_id"},
                    "ExpressionAttributeValues": values,
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
        )

    def _band_steps(self, rec: TypedRecord, bands: Sequence[str]) -> list[Step]:
        return [
            (
                "band",
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": keys.wire(keys.record_band(rec.workspace_id, rec.group, band)),
                        "UpdateExpression": "ADD #ids :id",
                        "ExpressionAttributeNames": {"#ids": "ids"},
                        "ExpressionAttributeValues": {":id": {"SS": [rec.public_id]}},
                    }
                },
            )
            for band in bands
        ]

    def _posting_steps(
        self, workspace_id: str, layer: str, record_id: str, postings: Sequence[Posting], *, remove: bool = False
    ) -> list[Step]:
        out: list[Step] = []
        for posting in postings:
            key = keys.wire(keys.record_term(workspace_id, layer, posting, record_id))
            op = (
                {"Delete": {"TableName": self.table, "Key": key}}
                if remove
                else {"Put": {"TableName": self.table, "Item": key}}
            )
            out.append(("posting", op))
        return out

    @staticmethod
    def _claim_refusal(old: dict[str, Any] | None) -> ApiError:
        if old is not None and old.get("record_id"):
            raise DuplicateClaimed(str(old["record_id"]))
        return ApiError("storage_busy", "The duplicate check was contended: send the record again.")

    # ---- writes ---------------------------------------------------------------------------------------

    def create_record(
        self,
        rec: TypedRecord,
        *,
        claim_until: float | None,
        dead_claim: str | None,
        bands: Sequence[str],
        supersede: TypedRecord | None,
        run_line: bool,
        terms: Sequence[Posting],
        budget: WriteBudget | None,
        now: float,
    ) -> None:
        """The record, its claim and band entries, its search postings, the record it supersedes and its
        run line, at once. A claim another record holds raises DuplicateClaimed with that record's id."""
        steps: list[Step] = [("record", self._new(kinds.RECORD.item(rec)))]
        steps += self._posting_steps(rec.workspace_id, rec.layer, rec.public_id, terms)
        if claim_until is not None:
            steps.append(self._claim_step(rec, dead_claim, claim_until, now))
        steps += self._band_steps(rec, bands)
        if supersede is not None:
            steps.append(("superseded", self._retire(supersede, rec.public_id, rec.created_at)))
        if run_line and rec.run_id is not None:
            line = {
                "pk": {"S": keys.record_run(rec.workspace_id, rec.run_id)},
                "sk": {"S": rec.public_id},
                "consolidated": {"BOOL": False},
            }
            steps.append(("run_line", {"Put": {"TableName": self.table, "Item": line}}))
        refusals = Refusals(
            {
                "claim": self._claim_refusal,
                "superseded": _record_refusal(None if supersede is None else supersede.lock_version),
            },
            otherwise=lambda: ApiError("already_exists", "That record exists."),
        )
        self.spend(budget)
        transact(self.ddb, steps, refusals)

    def _retire(self, old: TypedRecord, by: str, at: str) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self.table,
                "Key": keys.wire(keys.record(old.workspace_id, old.layer, old.public_id)),
                "UpdateExpression": "SET #by = :by, #at = :at, #lv = #lv + :one",
                "ConditionExpression": "attribute_exists(#pk) AND attribute_not_exists(#by) AND #lv = :lv",
                "ExpressionAttributeNames": {
                    "#pk": "pk",
                    "#by": "superseded_by",
                    "#at": "updated_at",
                    "#lv": "lock_version",
                },
                "ExpressionAttributeValues": {
                    ":by": {"S": by},
                    ":at": {"S": at},
                    ":one": {"N": "1"},
                    ":lv": {"N": str(old.lock_version)},
                },
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def absorb_record(
        self,
        target: TypedRecord,
        *,
        mention: bool,
        at: str,
        replaced: TypedRecord | None,
        claim: TypedRecord | None,
        claim_until: float | None,
        dead_claim: str | None,
        bands: Sequence[str],
        index: Sequence[Posting] = (),
        unindex: Sequence[Posting] = (),
        budget: WriteBudget | None,
        now: float,
    ) -> TypedRecord | None:
        """Count a mention (`mention`) or one more piece of evidence into `target`, which must be live and
        visible; with `replaced` its text is the new one as well (conditional on the version read), its
        postings under `index` put and those under `unindex` removed. `claim` puts the exact-duplicate
        claim of the absorbed text on `target`.

        Answers the record as stored when the change was a single write whose answer it could read."""
        counter = "mention_count" if mention else "evidence_count"
        names = {
            "#pk": "pk",
            "#n": counter,
            "#seen": "last_seen_at",
            "#by": "superseded_by",
            "#q": "quarantine",
        }
        values: dict[str, Any] = {":one": {"N": "1"}, ":at": {"S": at}, ":released": {"S": "released"}}
        sets = ["#seen = :at"]
        condition = (
            "attribute_exists(#pk) AND attribute_not_exists(#by) AND (attribute_not_exists(#q) OR #q = :released)"
        )
        removes: list[str] = []
        if replaced is not None:
            names |= {"#lv": "lock_version", "#up": "updated_at"}
            values[":lv"] = {"N": str(target.lock_version)}
            condition += " AND #lv = :lv"
            sets += ["#lv = #lv + :one", "#up = :at"]
            new_item = unmarshal(kinds.RECORD.item(replaced))
            for i, field in enumerate(("content", "content_digest", "pii", "labels", "s")):
                names[f"#f{i}"] = field
                if new_item.get(field) is None:
                    removes.append(f"#f{i}")
                else:
                    values[f":f{i}"] = attribute(new_item[field])
                    sets.append(f"#f{i} = :f{i}")
        expression = f"SET {', '.join(sets)} ADD #n :one" + (f" REMOVE {', '.join(removes)}" if removes else "")
        update = {
            "TableName": self.table,
            "Key": keys.wire(keys.record(target.workspace_id, target.layer, target.public_id)),
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        steps: list[Step] = [("record", {"Update": {**update, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}})]
        if claim is not None and claim_until is not None:
            steps.append(self._claim_step(claim, dead_claim, claim_until, now))
        steps += self._band_steps(target, bands)
        steps += self._posting_steps(target.workspace_id, target.layer, target.public_id, index)
        steps += self._posting_steps(target.workspace_id, target.layer, target.public_id, unindex, remove=True)
        refusals = Refusals({"claim": self._claim_refusal, "record": _moved})
        self.spend(budget)
        if len(steps) == 1 and not keyed():
            out = attempt(
                lambda: self.ddb.update_item(
                    **update, ReturnValues="ALL_NEW", ReturnValuesOnConditionCheckFailure="ALL_OLD"
                ),
                ["record"],
                refusals,
            )
            return kinds.RECORD.read(out["Attributes"]) if out.get("Attributes") else None
        transact(self.ddb, steps, refusals)
        return None

    def replace_record(
        self,
        before: TypedRecord,
        after: TypedRecord,
        bands: Sequence[str],
        budget: WriteBudget | None,
        *,
        index: Sequence[Posting] = (),
        unindex: Sequence[Posting] = (),
    ) -> None:
        """Store `after` if the record is still at `before`'s lock_version (else stale_object), with its
        postings under `index` put and those under `unindex` removed."""
        put = {
            "TableName": self.table,
            "Item": kinds.RECORD.item(after),
            "ConditionExpression": "attribute_exists(#pk) AND #lv = :lv",
            "ExpressionAttributeNames": {"#pk": "pk", "#lv": "lock_version"},
            "ExpressionAttributeValues": {":lv": {"N": str(before.lock_version)}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        steps: list[Step] = [("record", {"Put": put}), *self._band_steps(after, bands)]
        steps += self._posting_steps(after.workspace_id, after.layer, after.public_id, index)
        steps += self._posting_steps(after.workspace_id, after.layer, after.public_id, unindex, remove=True)
        self.spend(budget)
        transact(self.ddb, steps, Refusals({"record": _record_refusal(before.lock_version)}))

    def delete_record(
        self, rec: TypedRecord, expected: int, budget: WriteBudget | None, *, terms: Sequence[Posting] = ()
    ) -> None:
        """Remove the record, its postings under `terms` (and its run line) if it is still at `expected`
        (else stale_object)."""
        delete = {
            "TableName": self.table,
            "Key": keys.wire(keys.record(rec.workspace_id, rec.layer, rec.public_id)),
            "ConditionExpression": "attribute_exists(#pk) AND #lv = :lv",
            "ExpressionAttributeNames": {"#pk": "pk", "#lv": "lock_version"},
            "ExpressionAttributeValues": {":lv": {"N": str(expected)}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        steps: list[Step] = [("record", {"Delete": delete})]
        steps += self._posting_steps(rec.workspace_id, rec.layer, rec.public_id, terms, remove=True)
        if rec.layer == "Session" and rec.run_id is not None:
            line = (keys.record_run(rec.workspace_id, rec.run_id), rec.public_id)
            steps.append(("run_line", {"Delete": {"TableName": self.table, "Key": keys.wire(line)}}))
        self.spend(budget)
        transact(self.ddb, steps, Refusals({"record": _record_refusal(expected)}))

    def review_record(
        self,
        rec: TypedRecord,
        quarantine: Quarantine | None,
        budget: WriteBudget | None,
        *,
        terms: Sequence[Posting] = (),
    ) -> None:
        """Release (`quarantine` is the released state) or, with None, reject and remove a pending record;
        either way its postings under `terms` go in the same commit (a release's: the one that listed it
        as waiting for review)."""
        key = keys.wire(keys.record(rec.workspace_id, rec.layer, rec.public_id))
        names = {"#pk": "pk", "#q": "quarantine"}
        values: dict[str, Any] = {":pending": {"S": "pending"}}
        condition = "attribute_exists(#pk) AND #q = :pending"
        if quarantine is None:
            # Only the text read is rejected: its postings are the ones removed, so an edit since must
            # make the reviewer look again rather than leave the edited text's postings behind.
            names["#lv"] = "lock_version"
            values[":lv"] = {"N": str(rec.lock_version)}
            condition += " AND #lv = :lv"
        guard = {
            "TableName": self.table,
            "Key": key,
            "ConditionExpression": condition,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        steps: list[Step]
        if quarantine is None:
            steps = [
                (
                    "record",
                    {"Delete": {**guard, "ExpressionAttributeNames": names, "ExpressionAttributeValues": values}},
                )
            ]
            steps += self._posting_steps(rec.workspace_id, rec.layer, rec.public_id, terms, remove=True)
            if rec.layer == "Session" and rec.run_id is not None:
                line = (keys.record_run(rec.workspace_id, rec.run_id), rec.public_id)
                steps.append(("run_line", {"Delete": {"TableName": self.table, "Key": keys.wire(line)}}))
        else:
            sets = ["#q = :status", "#ra = :ra"]
            names["#ra"] = "reviewed_at"
            values |= {":status": {"S": quarantine.status}, ":ra": {"S": quarantine.reviewed_at or ""}}
            reviewer = author_attributes(quarantine.reviewed_by or Author("human", ""), "reviewed_by")
            for i, (attr, value) in enumerate(reviewer.items()):
                if value is not None:
                    names[f"#r{i}"] = attr
                    values[f":r{i}"] = {"S": value}
                    sets.append(f"#r{i} = :r{i}")
            update = {
                **guard,
                "UpdateExpression": "SET " + ", ".join(sets),
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
            }
            steps = [("record", {"Update": update})]
            steps += self._posting_steps(rec.workspace_id, rec.layer, rec.public_id, terms, remove=True)
        refusals = Refusals(
            {"record": lambda _: ApiError("validation_failed", "That record is not waiting for review.")}
        )
        self.spend(budget)
        transact(self.ddb, steps, refusals)

    # ---- reads ----------------------------------------------------------------------------------------

    def workspace_records(self, workspace_id: str, layer: str) -> tuple[list[TypedRecord], bool]:
        """What a search reads of every record of one layer of a workspace (the `_SEARCHED` fields only),
        its shards queried in parallel (eventually consistent: a search may miss a record written in the
        last second), and whether the read stopped at MAX_SEARCHED."""
        per_shard = MAX_SEARCHED // keys.RECORD_SHARDS
        futures = [
            pool().submit(self._shard, workspace_id, keys.record_partition(workspace_id, layer, n), per_shard)
            for n in range(keys.RECORD_SHARDS)
        ]
        out: list[TypedRecord] = []
        truncated = False
        for f in futures:
            rows, more = f.result()
            out += rows
            truncated = truncated or more
        return out, truncated

    def indexed_records(
        self, workspace_id: str, layer: str, terms: Sequence[str], per_term: int
    ) -> tuple[list[TypedRecord], bool]:
        """What a search reads (the `_SEARCHED` fields) of the records the postings of `terms` name, at most
        the `per_term` best-weighted of each term: one Query per term in parallel, then the named records in
        batches of 100, in parallel. Eventually consistent, as the unindexed read is. Also answers whether
        some term has more postings than were read (older records left out)."""
        queries = [pool().submit(self._postings, workspace_id, layer, term, per_term) for term in terms]
        ids: dict[str, None] = {}
        more = False
        for f in queries:
            found, full = f.result()
            ids.update(dict.fromkeys(found))
            more = more or full
        wanted = [keys.wire(keys.record(workspace_id, layer, rid)) for rid in ids]
        batches = [
            pool().submit(self._searched_batch, workspace_id, wanted[k : k + _GET_BATCH])
            for k in range(0, len(wanted), _GET_BATCH)
        ]
        rows: list[TypedRecord] = []
        for batch in batches:
            rows += batch.result()
        return rows, more

    def _postings(self, workspace_id: str, layer: str, term: str, limit: int) -> tuple[list[str], bool]:
        pk = keys.record_term_partition(workspace_id, layer, term)
        resp: dict[str, Any] = read(
            partial(
                self.ddb.query,
                TableName=self.table,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": pk}},
                ProjectionExpression="sk",
                # The highest impact first (ties: ids are UUIDv7, the newest first).
                ScanIndexForward=False,
                Limit=limit,
            )
        )
        found = [it["sk"]["S"].partition("#")[2] for it in resp.get("Items", [])]
        return found, "LastEvaluatedKey" in resp

    def _searched_batch(self, workspace_id: str, wanted: list[dict[str, Any]]) -> list[TypedRecord]:
        request: dict[str, Any] = {self.table: {"Keys": wanted, "ProjectionExpression": _SEARCHED}}
        rows: list[TypedRecord] = []
        for retry in range(PACING.retries + 1):
            if retry:
                PACING.pause(retry - 1)
            resp: dict[str, Any] = read(partial(self.ddb.batch_get_item, RequestItems=request))
            rows += [record_searched_row(it, workspace_id) for it in resp.get("Responses", {}).get(self.table, [])]
            request = resp.get("UnprocessedKeys") or {}
            if not request:
                return rows
        raise busy()

    def write_postings(
        self,
        workspace_id: str,
        layer: str,
        postings: Sequence[tuple[str, Sequence[Posting]]],
        *,
        remove: bool = False,
    ) -> None:
        """Put (or, with `remove`, delete) the postings of (record id, its postings) pairs, 25 to a request.
        Only a reindex writes postings outside a record's own commit (domain/records/service.py says why
        that is safe)."""
        ops = []
        for record_id, held in postings:
            for posting in held:
                key = keys.wire(keys.record_term(workspace_id, layer, posting, record_id))
                ops.append({"DeleteRequest": {"Key": key}} if remove else {"PutRequest": {"Item": key}})
        for k in range(0, len(ops), _WRITE_BATCH):
            request: dict[str, Any] = {self.table: ops[k : k + _WRITE_BATCH]}
            for retry in range(PACING.retries + 1):
                if retry:
                    PACING.pause(retry - 1)
                resp: dict[str, Any] = read(partial(self.ddb.batch_write_item, RequestItems=request))
                request = resp.get("UnprocessedItems") or {}
                if not request:
                    break
            else:
                raise busy()

    def mark_records_indexed(self, workspace_id: str, version: int) -> None:
        """Say that every record of the workspace has its postings of index `version`: searches use them."""
        attempt(
            lambda: self.ddb.update_item(
                TableName=self.table,
                Key=keys.wire(keys.workspace(workspace_id)),
                UpdateExpression="SET #v = :v",
                ConditionExpression="attribute_exists(#pk)",
                ExpressionAttributeNames={"#pk": "pk", "#v": "records_index"},
                ExpressionAttributeValues={":v": {"N": str(version)}},
            ),
            ["workspace"],
            Refusals({"workspace": lambda _: ApiError("not_found", "No workspace with that id.")}),
        )

    def workspaces_to_reindex(self, version: int) -> list[str]:
        """The ids of every workspace not at index `version`: a whole-table Scan, for an operator's one-off
        reindex (`agent-memory reindex-records --all`), never a request's."""
        found: list[str] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "FilterExpression": "begins_with(#pk, :ws) AND #sk = :sk AND (attribute_not_exists(#v) OR #v <> :v)",
            "ProjectionExpression": "#pk",
            "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk", "#v": "records_index"},
            "ExpressionAttributeValues": {
                ":ws": {"S": keys.WORKSPACE},
                ":sk": {"S": kinds.WORKSPACE.sk},
                ":v": {"N": str(version)},
            },
        }
        while True:
            resp: dict[str, Any] = read(partial(self.ddb.scan, **kwargs))
            found += [it["pk"]["S"][len(keys.WORKSPACE) :] for it in resp.get("Items", [])]
            if "LastEvaluatedKey" not in resp:
                return found
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def _shard(self, workspace_id: str, pk: str, limit: int) -> tuple[list[TypedRecord], bool]:
        rows: list[TypedRecord] = []
        start: dict[str, Any] | None = None
        while True:
            kwargs: dict[str, Any] = {
                "TableName": self.table,
                "KeyConditionExpression": "pk = :pk",
                "ProjectionExpression": _SEARCHED,
                "ExpressionAttributeValues": {":pk": {"S": pk}},
            }
            if start is not None:
                kwargs["ExclusiveStartKey"] = start
            resp: dict[str, Any] = read(partial(self.ddb.query, **kwargs))
            rows += [record_searched_row(it, workspace_id) for it in resp.get("Items", [])]
            start = resp.get("LastEvaluatedKey")
            if start is None:
                return rows, False
            if len(rows) >= limit:
                return rows, True

    def record_page(
        self, workspace_id: str, layer: str, shard: int, after: str | None, limit: int
    ) -> tuple[list[TypedRecord], bool]:
        """Up to `limit` records of one shard of one layer, in id order, from just after the id `after`
        (from its start when None), and whether the shard may hold more past them. An export walks a
        workspace this way, shard by shard, so each of its pages costs a bounded number of reads."""
        pk = keys.record_partition(workspace_id, layer, shard)
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
        }
        if after is not None:
            # A key condition, not ExclusiveStartKey: the cursor's id need not name a record that still exists.
            kwargs["KeyConditionExpression"] += " AND sk > :after"
            kwargs["ExpressionAttributeValues"][":after"] = {"S": after}
        rows: list[TypedRecord] = []
        while len(rows) < limit:
            resp: dict[str, Any] = read(partial(self.ddb.query, **kwargs, Limit=limit - len(rows)))
            rows += [kinds.RECORD.read(it) for it in resp.get("Items", [])]
            start = resp.get("LastEvaluatedKey")
            if start is None:
                return rows, False
            kwargs["ExclusiveStartKey"] = start
        return rows, True

    def run_lines(self, workspace_id: str, run_id: str) -> list[RunLine]:
        """A run's raw lines in the order they were written (ids are UUIDv7), up to a bound."""
        resp = read(
            lambda: self.ddb.query(
                TableName=self.table,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": keys.record_run(workspace_id, run_id)}},
                ConsistentRead=True,
                Limit=_RUN_LINES,
            )
        )
        return [kinds.RUN_LINE.read(it) for it in resp.get("Items", [])]

    def claim_run_line(self, workspace_id: str, run_id: str, record_id: str, operation: str, until: float) -> bool:
        """Take a raw line for one consolidation; False when it is consolidated or another holds it."""
        try:
            attempt(
                lambda: self.ddb.update_item(
                    TableName=self.table,
                    Key=keys.wire((keys.record_run(workspace_id, run_id), record_id)),
                    UpdateExpression="SET #by = :op, #until = :until",
                    ConditionExpression=(
                        "attribute_exists(#pk) AND #done = :no AND (attribute_not_exists(#until) OR #until < :now)"
                    ),
                    ExpressionAttributeNames={
                        "#pk": "pk",
                        "#by": "claimed_by",
                        "#until": "claimed_until",
                        "#done": "consolidated",
                    },
                    ExpressionAttributeValues={
                        ":op": {"S": operation},
                        ":until": {"N": repr(until)},
                        ":now": {"N": repr(clock.now())},
                        ":no": {"BOOL": False},
                    },
                ),
                ["run_line"],
                Refusals(),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def finish_run_line(self, workspace_id: str, run_id: str, record_id: str, operation: str) -> None:
        """Mark a claimed raw line consolidated (only by the consolidation that holds it)."""
        try:
            attempt(
                lambda: self.ddb.update_item(
                    TableName=self.table,
                    Key=keys.wire((keys.record_run(workspace_id, run_id), record_id)),
                    UpdateExpression="SET #done = :yes REMOVE #until",
                    ConditionExpression="#by = :op",
                    ExpressionAttributeNames={"#done": "consolidated", "#until": "claimed_until", "#by": "claimed_by"},
                    ExpressionAttributeValues={":yes": {"BOOL": True}, ":op": {"S": operation}},
                ),
                ["run_line"],
                Refusals(),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
