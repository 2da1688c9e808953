"""Document pointer rows: listing, the conditional commit, the write budget's meters and the fork."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agent_memory.api.errors import ApiError, destination_taken, stale, version_not_found, version_redacted
from agent_memory.core import clock
from agent_memory.core.ids import now_iso
from agent_memory.core.model import (
    Anchor,
    Author,
    Conversation,
    ConversationBump,
    Document,
    DocumentChange,
    EntryPage,
    ForkBase,
    Meter,
    Version,
    VersionCheck,
    WriteBudget,
    file_count_delta,
    max_documents,
)
from agent_memory.store import keys, kinds
from agent_memory.store.clients import Backend
from agent_memory.store.commit import TRANSACTION_ITEMS, Refusal, Refusals, Step, attempt, read, transact, write_one
from agent_memory.store.content import pool
from agent_memory.store.forklog import fork_log_item
from agent_memory.store.items import author_attributes, author_of, marshal

# Changes per transaction of a grouped commit: three items each at most (pointer, record, pruned record),
# and the counter row.
GROUP_SIZE = 32


class Documents(Backend):
    """Pointer rows under their anchors, each change conditioned on what its writer read."""

    def list_documents(self, anchor: Anchor) -> list[Document]:
        """Every document row of an anchor, ordered by path."""
        docs: list[Document] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :doc)",
            "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk"},
            "ExpressionAttributeValues": {":pk": {"S": keys.anchor_pk(anchor)}, ":doc": {"S": keys.DOC}},
            "ConsistentRead": True,
        }
        while True:
            resp = read(lambda: self.ddb.query(**kwargs))
            docs.extend(kinds.DOCUMENT.read(it) for it in resp.get("Items", []))
            if "LastEvaluatedKey" not in resp:
                return docs
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def list_many(self, anchors: list[Anchor]) -> dict[Anchor, list[Document]]:
        """`list_documents` for several anchors, queried in parallel."""
        unique = list(dict.fromkeys(anchors))
        if len(unique) <= 1:
            return {a: self.list_documents(a) for a in unique}
        # The calling thread queries the first anchor itself while the pool queries the rest: the same
        # parallelism with one thread hand-off fewer (each costs ~0.1 ms of CPU, measured by tests/bench.py).
        pending = [(a, pool().submit(self.list_documents, a)) for a in unique[1:]]
        out = {unique[0]: self.list_documents(unique[0])}
        out.update((a, f.result()) for a, f in pending)
        return out

    # ---- the conditional commit ------------------------------------------------------------------

    def commit(self, change: DocumentChange) -> None:
        """Apply one conditional change in one request, or refuse it and change nothing."""
        # The document row carries the writer's condition; when the document count moves (create,
        # delete) or the conversation's revision must move with it, the items go in one transaction
        # so that either all of them commit or none does. The caller's write budget is spent just before,
        # outside the commit (`spend`).
        creates = change.expected is None and change.new is not None
        steps: list[Step] = [("document", self._doc_op(change))]
        count = 1 if creates else -1 if change.new is None else 0
        if change.anchor.scope == "memory":
            # A Memory's counter row moves with every commit of its files (count, bytes, last writer), and
            # refuses one into a Memory deleted meanwhile; a lease held by anyone else refuses it too.
            steps.append(("meta", self._memory_meta_op(change.anchor, count, change.size_delta, change)))
            if change.writer is not None:
                steps.append(("lease", self._lease_check(change.anchor, change.rest, change.writer)))
        elif count:
            steps.append(("meta", self._meta_op(change.anchor, count)))
        if change.bump is not None:
            steps.append(("conversation", self._bump_op(change.bump)))
        if change.alias is not None:
            steps.append(("alias", self._bump_op(change.alias)))
        # An execution's change lands only while neither it nor any execution it was spawned from is stopped:
        # a stop acknowledged before this commit refuses it.
        steps += [("stopped", self._running_check(execution_id)) for execution_id in change.running]
        # The version's history record rides in the same commit: a version is recorded exactly when its
        # pointer lands, and recording it costs no request.
        if change.version is not None:
            steps.append(("version", {"Put": {"TableName": self.table, "Item": kinds.VERSION.item(change.version)}}))
        source = None if change.requires is None else self._source_check(change.requires)["ConditionCheck"]
        if change.prune is not None:
            key = keys.wire(keys.version(change.anchor, change.rest, change.prune))
            if source is not None and source["Key"] == key:
                # A rollback to the oldest kept version prunes the very record it copies: DynamoDB takes one
                # operation per item, so the prune's Delete carries the source's condition.
                steps.append(("source", {"Delete": source}))
                source = None
            else:
                steps.append(("prune", {"Delete": {"TableName": self.table, "Key": key}}))
        if source is not None:
            steps.append(("source", {"ConditionCheck": source}))
        pruned = None if change.prune is None else keys.version(change.anchor, change.rest, change.prune)
        steps += [
            ("verdict", {"Put": {"TableName": self.table, "Item": kinds.VERSION.item(v)}})
            for v in change.also
            # A record leaving the retention bound in this commit needs no verdict: it is gone.
            if keys.version(v.anchor, v.rest, v.lock_version) != pruned
        ]
        refusals = _commit_refusals(change, creates)
        self.spend(change.budget)
        if len(steps) == 1:
            write_one(self.ddb, steps[0], refusals)
            return
        transact(self.ddb, steps, refusals)

    def commit_rename(self, removal: DocumentChange, creation: DocumentChange) -> None:
        """A rename: `creation` (an absent path, pointing at the removed version's object) and `removal`
        (a delete on its pair) in one TransactWriteItems, so both land or neither does.

        Each anchor's counter moves as its own create or delete would move it (one anchor: a Memory's row
        still moves, to refuse a rename into a deleted Memory; any other anchor's count is unchanged), the
        conversations both changes move are bumped once each, and the stop checks and the leases are carried
        once; the budget is spent once, just before. The new version's record rides in it; the old
        document's records are the sweeper's, as a delete's are."""
        steps: list[Step] = [("document", self._doc_op(removal)), ("target", self._doc_op(creation))]
        same = removal.anchor == creation.anchor
        for role, change, count in (("meta", creation, 0 if same else 1), ("meta_old", removal, -1)):
            if same and role == "meta_old":
                continue
            if change.anchor.scope == "memory":
                size = change.size_delta + (removal.size_delta if same else 0)
                steps.append((role, self._memory_meta_op(change.anchor, count, size, change)))
            elif count:
                steps.append((role, self._meta_op(change.anchor, count)))
        for role, change in (("lease", creation), ("lease_old", removal)):
            if change.anchor.scope == "memory" and change.writer is not None:
                steps.append((role, self._lease_check(change.anchor, change.rest, change.writer)))
        bumped: set[str] = set()
        for role, bump in (
            ("conversation", creation.bump),
            ("alias", creation.alias),
            ("conversation_old", removal.bump),
            ("alias_old", removal.alias),
        ):
            if bump is not None and bump.conversation_id not in bumped:
                bumped.add(bump.conversation_id)
                steps.append((role, self._bump_op(bump)))
        running = dict.fromkeys((*creation.running, *removal.running))
        steps += [("stopped", self._running_check(execution_id)) for execution_id in running]
        if creation.version is not None:
            steps.append(("version", {"Put": {"TableName": self.table, "Item": kinds.VERSION.item(creation.version)}}))
        refusals = _rename_refusals(removal, creation)
        self.spend(creation.budget)
        transact(self.ddb, steps, refusals)

    def _group_steps(self, group: list[DocumentChange]) -> tuple[list[Step], Refusals]:
        """One transaction's worth of a Memory's file changes (a git import's): every change keeps its own
        condition, and the counter row moves once for all of them."""
        steps: list[Step] = []
        count = size = 0
        for change in group:
            steps.append(("document", self._doc_op(change)))
            if change.version is not None:
                record = kinds.VERSION.item(change.version)
                steps.append(("version", {"Put": {"TableName": self.table, "Item": record}}))
            if change.prune is not None:
                key = keys.wire(keys.version(change.anchor, change.rest, change.prune))
                steps.append(("prune", {"Delete": {"TableName": self.table, "Key": key}}))
            count += file_count_delta(change)
            size += change.size_delta
        last = group[-1]
        steps.append(("meta", self._memory_meta_op(last.anchor, count, size, last)))
        return steps, _commit_refusals(last, count > 0)

    def _doc_op(self, change: DocumentChange) -> dict[str, Any]:
        op: dict[str, Any] = {"TableName": self.table, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
        if change.expected is None:
            op["ConditionExpression"] = "attribute_not_exists(#pk)"
            op["ExpressionAttributeNames"] = {"#pk": "pk"}
        else:
            # The pair, not the version alone: a path deleted and created again restarts at version 0.
            op["ConditionExpression"] = "#pid = :epid AND #lv = :elv"
            op["ExpressionAttributeNames"] = {"#pid": "public_id", "#lv": "lock_version"}
            op["ExpressionAttributeValues"] = {
                ":epid": {"S": change.expected[0]},
                ":elv": {"N": str(change.expected[1])},
            }
        if change.new is None:
            return {"Delete": {**op, "Key": keys.wire(keys.document(change.anchor, change.rest))}}
        return {"Put": {**op, "Item": kinds.DOCUMENT.item(change.new)}}

    def _source_check(self, need: VersionCheck) -> dict[str, Any]:
        return {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": keys.wire(keys.version(need.anchor, need.rest, need.lock_version)),
                "ConditionExpression": "#pid = :pid AND attribute_exists(#ck)",
                "ExpressionAttributeNames": {"#pid": "public_id", "#ck": "content_key"},
                "ExpressionAttributeValues": {":pid": {"S": need.public_id}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _memory_meta_op(self, anchor: Anchor, count: int, size: int, change: DocumentChange) -> dict[str, Any]:
        names = {"#pk": "pk", "#dc": "doc_count", "#b": "bytes", "#del": "deleted_at"}
        values: dict[str, Any] = {":d": {"N": str(count)}, ":b": {"N": str(size)}}
        cond = "attribute_exists(#pk) AND attribute_not_exists(#del)"
        if count > 0:
            cond += " AND (attribute_not_exists(#dc) OR #dc <= :cap)"
            values[":cap"] = {"N": str(max_documents(anchor) - count)}
        update = "ADD #dc :d, #b :b"
        author = change.new.author if change.new is not None else change.writer
        if author is not None:
            sets = []
            for name, value in _author_values("written_by", author).items():
                names[f"#{name}"] = name
                values[f":{name}"] = value
                sets.append(f"#{name} = :{name}")
            names["#wa"] = "written_at"
            values[":wa"] = {"S": change.written_at or now_iso()}
            sets.append("#wa = :wa")
            update = "SET " + ", ".join(sets) + " " + update
        return {
            "Update": {
                "TableName": self.table,
                "Key": keys.wire(keys.meta(anchor)),
                "UpdateExpression": update,
                "ConditionExpression": cond,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _lease_check(self, anchor: Anchor, rest: str, writer: Author) -> dict[str, Any]:
        return {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": keys.wire(keys.lease(anchor, rest)),
                **lease_free_for(writer),
            }
        }

    def _meta_op(self, anchor: Anchor, delta: int) -> dict[str, Any]:
        op: dict[str, Any] = {
            "TableName": self.table,
            "Key": keys.wire(keys.meta(anchor)),
            "UpdateExpression": "ADD #dc :d",
            "ExpressionAttributeNames": {"#dc": "doc_count"},
            "ExpressionAttributeValues": {":d": {"N": str(delta)}},
        }
        if delta > 0:
            op["ConditionExpression"] = "attribute_not_exists(#dc) OR #dc <= :cap"
            op["ExpressionAttributeValues"][":cap"] = {"N": str(max_documents(anchor) - delta)}
        return {"Update": op}

    def _running_check(self, execution_id: str) -> dict[str, Any]:
        return {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": keys.wire(keys.execution_stop(execution_id)),
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": "pk"},
            }
        }

    def _bump_op(self, bump: ConversationBump) -> dict[str, Any]:
        # A deleted conversation's tombstone refuses every change that would move it.
        cond = ["attribute_exists(#pk)", "attribute_not_exists(#del)"]
        names = {"#pk": "pk", "#cr": "context_revision", "#del": "deleted_at"}
        values: dict[str, Any] = {":one": {"N": "1"}}
        if bump.refuse_archived:
            cond.append("#ar = :f")
            names["#ar"] = "archived"
            values[":f"] = {"BOOL": False}
        if bump.expected_context_revision is not None:
            cond.append("#cr = :ecr")
            values[":ecr"] = {"N": str(bump.expected_context_revision)}
        return {
            "Update": {
                "TableName": self.table,
                "Key": keys.wire(keys.conversation(bump.conversation_id)),
                "UpdateExpression": "SET #cr = #cr + :one",
                "ConditionExpression": " AND ".join(cond),
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _meter_update(self, meter: Meter, minute: int) -> dict[str, Any]:
        return {
            "TableName": self.table,
            "Key": keys.wire(keys.rate(meter.subject, meter.key, minute)),
            "UpdateExpression": "SET #exp = :exp ADD #n :one",
            "ConditionExpression": "attribute_not_exists(#n) OR #n < :limit",
            "ExpressionAttributeNames": {"#exp": "expires_at", "#n": "n"},
            "ExpressionAttributeValues": {
                ":one": {"N": "1"},
                ":limit": {"N": str(meter.per_minute)},
                ":exp": {"N": str((minute + 2) * 60)},
            },
        }

    def spend(self, budget: WriteBudget | None) -> None:
        """Count one mutation against every meter, or refuse `rate_limited` (nothing of the change is sent).

        One conditional UpdateItem per meter, sent together, outside any transaction: a standalone write
        costs one unit where a transaction item costs two, the change's own commit keeps its size, and the
        account's and the address's rows, shared by every writer, never make two commits conflict
        (docs/decisions.md). A meter that refuses counts nothing; the others sent with it keep their count:
        the attempt was made, and a meter's count only grows within its minute, so the one that refused
        goes on refusing that minute whatever the others hold."""
        if budget is None or not budget.meters:
            return
        minute = int(clock.now() // 60)
        first, *others = budget.meters
        # The calling thread sends the first meter while the pool sends the rest (as `list_many` does).
        pending = [pool().submit(self._spend_one, m, minute) for m in others]
        try:
            self._spend_one(first, minute)
            failed: BaseException | None = None
        except Exception as exc:
            failed = exc
        _refuse_first([failed, *(f.exception() for f in pending)])

    @contextmanager
    def spending(self, budget: WriteBudget | None) -> Iterator[None]:
        """`spend`, sent as the block begins and awaited as it ends, so the meters share a step with what
        the block sends (a content upload). A refusal is raised as the block ends, ahead of whatever the
        block raised: no commit after the block is ever sent for a request over its budget."""
        if budget is None or not budget.meters:
            yield
            return
        minute = int(clock.now() // 60)
        # Every meter goes to the pool: the calling thread is the block's.
        pending = [pool().submit(self._spend_one, m, minute) for m in budget.meters]
        try:
            yield
        finally:
            # Awaited even when the block failed, so no meter's request outlives the request that sent it
            # (a Lambda frozen with a request in flight would resume it in another invocation).
            _refuse_first([f.exception() for f in pending])

    def _spend_one(self, meter: Meter, minute: int) -> None:
        update = self._meter_update(meter, minute)
        role = f"budget:{meter.subject}"
        attempt(lambda: self.ddb.update_item(**update), [role], Refusals({role: _rate_limited(meter)}))

    # ---- forks -----------------------------------------------------------------------------------

    def fork_conversation(
        self,
        child: Conversation,
        documents: list[Document],
        versions: list[Version],
        budget: WriteBudget | None,
        forked_at: float,
        entry_pages: list[EntryPage] | None = None,
        base: ForkBase | None = None,
    ) -> None:
        """Create the child conversation and copies of the pointer rows in one transaction.

        The parent's store entry pages (at most ENTRY_PAGES items) and the fork's base (one item: each
        copied document's pair, for a later merge) ride in that same transaction.

        The write budget is spent first (`spend`). The child's first history records (one `fork` version per
        document) ride in the same transaction when everything fits in DynamoDB's 100 items, one kept for a
        keyed request's record (two items a document: up to 47 documents, fewer with entry pages or a base),
        so such a fork is one transaction, all or nothing. A larger fork sends the records first, in a
        transaction of their own: records without their pointer rows are invisible (a history is read from the
        pointer row first) and the sweeper removes them, so a fork refused or lost after that first
        transaction changes nothing anyone sees.
        """
        self.spend(budget)
        records: list[Step] = [
            ("version", {"Put": {"TableName": self.table, "Item": kinds.VERSION.item(v)}}) for v in versions
        ]
        parent_id = child.parent_public_id or ""
        steps: list[Step] = [
            (
                "conversation",
                {
                    "Put": {
                        "TableName": self.table,
                        "Item": kinds.CONVERSATION_ANY.item(child),
                        "ConditionExpression": "attribute_not_exists(#pk)",
                        "ExpressionAttributeNames": {"#pk": "pk"},
                        # The old item shows whether a refused fork was this fork, landed by an earlier send.
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                },
            )
        ]
        # The child joins its workspace's index of conversations (what an export walks).
        steps.append(("room", {"Put": {"TableName": self.table, "Item": kinds.ROOM_CONVERSATION.item(child)}}))
        if documents:
            anchor = Anchor("conversation", child.public_id)
            steps.append(
                ("meta", {"Put": {"TableName": self.table, "Item": kinds.META.item(len(documents), anchor=anchor.key)}})
            )
            steps += [
                ("document", {"Put": {"TableName": self.table, "Item": kinds.DOCUMENT.item(d, anchor=anchor.key)}})
                for d in documents
            ]
            entry = fork_log_item(child.public_id, [d.content_key for d in documents])
            steps.append(("forklog", {"Put": {"TableName": self.table, "Item": marshal(entry)}}))
            # The parent remembers when it was last forked (marked already before the rows were read,
            # directory.py): a redaction there deletes bytes at once only when no fork since they were
            # written can hold them (history.py).
            steps.append(
                (
                    "parent",
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": keys.wire(keys.conversation(parent_id)),
                            "UpdateExpression": "SET #fa = :fa",
                            # A parent deleted while the fork ran is refused: its rows go to the sweeper.
                            "ConditionExpression": "attribute_exists(#pk) AND attribute_not_exists(#del)",
                            "ExpressionAttributeNames": {"#fa": "forked_at", "#pk": "pk", "#del": "deleted_at"},
                            "ExpressionAttributeValues": {":fa": {"N": str(int(forked_at))}},
                        }
                    },
                )
            )
        steps += [
            (
                "entries",
                {"Put": {"TableName": self.table, "Item": kinds.ENTRY_PAGE.item(p, conversation_id=child.public_id)}},
            )
            for p in entry_pages or ()
            if p.entries
        ]
        if base is not None:
            steps.append(("base", {"Put": {"TableName": self.table, "Item": kinds.FORK_BASE.item(base)}}))
        # Only the child's own row and the parent's are conditioned; contention is retried by the translator,
        # and any other cancellation stays the 500 it is.
        child_refused: dict[str, Refusal] = {
            "conversation": lambda _: ApiError("already_exists", "That conversation already exists."),
            "parent": lambda _: ApiError("not_found", "That conversation does not exist."),
        }
        if len(steps) + len(records) + 1 <= TRANSACTION_ITEMS:
            transact(self.ddb, [*steps, *records], Refusals(child_refused))
            return
        if records:
            # Not the fork's decisive commit: a keyed fork's record rides in the child's transaction below.
            transact(self.ddb, records, Refusals(), decisive=False)
        transact(self.ddb, steps, Refusals(child_refused))


def _commit_refusals(change: DocumentChange, creates: bool) -> Refusals:
    """What a refused commit means, most telling first: a stop, then the conversation, then the row (the
    budget was spent before the commit, `Documents.spend`)."""
    by_role: dict[str, Refusal] = {}
    # A stop is final: it explains a refusal before anything the caller could retry.
    if change.running:
        by_role["stopped"] = lambda _: ApiError(
            "execution_stopped",
            "This execution was stopped (itself, or an execution it was spawned from): its tools no longer "
            "answer and nothing was changed.",
        )
    bump = change.bump
    if bump is not None:

        def conversation_refused(old: dict[str, Any] | None) -> ApiError:
            if (old is None or old.get("deleted_at") is not None) and bump.by_execution:
                return _stopped_by_deletion()
            if old is None or old.get("deleted_at") is not None:
                return ApiError("not_found", "That conversation does not exist.")
            if bump.refuse_archived and old.get("archived"):
                return ApiError("conversation_archived", "The conversation is archived: its memory is read-only.")
            return ApiError(
                "stale_object",
                f"The conversation's context_revision is {old.get('context_revision')}, not the "
                "expected_context_revision you sent: read the conversation again.",
            )

        by_role["conversation"] = conversation_refused
    alias = change.alias
    if alias is not None:

        def alias_refused(old: dict[str, Any] | None) -> ApiError:
            if old is None or old.get("deleted_at") is not None:
                return ApiError("memory_scope_unavailable", "The conversation behind that root no longer exists.")
            return ApiError(
                "conversation_archived", "The conversation behind that root is archived: its memory is read-only."
            )

        by_role["alias"] = alias_refused
    by_role["document"] = lambda _: stale()
    need = change.requires
    if need is not None:

        def source_refused(old: dict[str, Any] | None) -> ApiError:
            if old is None or old.get("public_id") != need.public_id:
                return version_not_found(need.lock_version)
            return version_redacted(need.lock_version)

        by_role["source"] = source_refused
    cap = max_documents(change.anchor)
    if change.anchor.scope == "memory":

        def memory_refused(old: dict[str, Any] | None) -> ApiError:
            if old is None or old.get("deleted_at") is not None:
                return ApiError("not_found", "That Memory no longer exists.")
            return ApiError("memory_full", f"This Memory already holds {cap} files: delete one first.")

        by_role["meta"] = memory_refused
        by_role["lease"] = leased_refusal
    elif creates:
        # The counter's condition only fails a create: the anchor already holds the most it may.
        by_role["meta"] = lambda _: ApiError(
            "memory_full",
            f"This scope already holds {cap} documents: delete or merge one first.",
        )
    # A cancellation by a concurrent transaction (TransactionConflict) or by throttling is no refusal:
    # the translator retries it, and every condition above is checked again on each attempt, so a writer
    # whose view went stale meanwhile is still refused as stale.
    return Refusals(by_role, otherwise=stale)


def _rename_refusals(removal: DocumentChange, creation: DocumentChange) -> Refusals:
    """A rename's refusals: the create's (a stop, the conversations, the new anchor's cap),
    then the removed document's pair (stale_object) and the new path taken (already_exists)."""
    made = _commit_refusals(creation, True)
    by_role = dict(made.by_role)
    gone = _commit_refusals(removal, False).by_role
    for role in ("conversation", "alias", "meta", "lease"):
        if role in gone:
            by_role[f"{role}_old"] = gone[role]
    by_role["document"] = lambda _: stale()
    by_role["target"] = lambda _: destination_taken(creation.rest)
    return Refusals(by_role, otherwise=stale)


def _stopped_by_deletion() -> ApiError:
    return ApiError("execution_stopped", "This execution's conversation was deleted: its tools no longer answer.")


def lease_free_for(writer: Author) -> dict[str, Any]:
    """The condition that no one but `writer` holds an unexpired lease on a file (a write's, and a new
    lease's): absent, expired, or the writer's own."""
    return {
        "ConditionExpression": "attribute_not_exists(#pk) OR #lu <= :now OR #hk = :me",
        "ExpressionAttributeNames": {"#pk": "pk", "#lu": "lease_until", "#hk": "holder_key"},
        "ExpressionAttributeValues": {
            ":now": {"N": f"{clock.now():.3f}"},
            ":me": {"S": f"{writer.kind}:{writer.public_id}"},
        },
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def leased_refusal(old: dict[str, Any] | None) -> ApiError:
    """A change refused by a lease someone else holds on the file: who holds it, and until when."""
    holder = author_of(old or {}, "holder")
    until = float((old or {}).get("lease_until") or 0)
    at = clock.iso_of(until)
    return ApiError(
        "memory_leased",
        f"{(old or {}).get('path', 'This file')!r} is leased by {holder.name or holder.public_id} until {at}: "
        "try again after the lease ends.",
        holder={"kind": holder.kind, "public_id": holder.public_id, "name": holder.name},
        expires_at=at,
    )


def _author_values(prefix: str, author: Author) -> dict[str, Any]:
    """An author's flat attributes in the wire format, for an UpdateExpression's SET."""
    return {k: {"S": v} for k, v in author_attributes(author, prefix).items() if v is not None}


_SPENT = {
    "principal": "You have used this minute's budget of {n} writes",
    "account": "Your account has used this minute's budget of {n} writes",
    "origin": "Requests from your address have used this minute's budget of {n} writes",
}


def _refuse_first(outcomes: list[BaseException | None]) -> None:
    """Raise the first meter's refusal in the budget's order: the caller's own, then its account's, then
    the address's."""
    failed = next((f for f in outcomes if f is not None), None)
    if failed is not None:
        raise failed


def _budget_refusals(budget: WriteBudget) -> dict[str, Refusal]:
    return {f"budget:{m.subject}": _rate_limited(m) for m in budget.meters}


def _rate_limited(meter: Meter) -> Refusal:
    def refused(_: dict[str, Any] | None) -> ApiError:
        wait = 60 - int(clock.now()) % 60
        return ApiError(
            "rate_limited",
            _SPENT[meter.subject].format(n=meter.per_minute) + f"; nothing was changed. Try again in {wait} seconds.",
            retry_after_seconds=wait,
        )

    return refused
