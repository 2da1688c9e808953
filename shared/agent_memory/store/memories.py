"""Organization Memories: their rows, the account's indexes of them, attachments, leases and deletion.

A Memory's files are documents under the anchor `memory#<id>` (documents.py commits them); this module
keeps what is about the Memory as a whole. Every change that spans rows is one transaction, so an index
never disagrees with what it indexes: a Memory and its name claim and index entry appear and go together,
and an attachment moves the agent's list, the Memory's edge and its count at once.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agent_memory.api.errors import ApiError, version_not_found, version_redacted
from agent_memory.core import clock
from agent_memory.core.model import (
    Agent,
    Anchor,
    Attachment,
    Document,
    DocumentChange,
    Lease,
    MemoryDefault,
    MemoryReference,
    MemoryStats,
    OrgMemory,
    Version,
    VersionCheck,
)
from agent_memory.store import keys, kinds
from agent_memory.store.commit import Refusals, Step, read, transact, write_one
from agent_memory.store.documents import GROUP_SIZE, Documents, lease_free_for, leased_refusal
from agent_memory.store.items import (
    attachments_attribute,
    attribute,
    author_attributes,
    marshal,
    memory_settings,
    unmarshal,
)


def _gone() -> ApiError:
    return ApiError("not_found", "No Memory with that id is visible to you.")


class Memories(Documents):
    """A Memory's own rows and the account's indexes of them."""

    def _put(self, item: dict[str, Any]) -> dict[str, Any]:
        return {"Put": {"TableName": self.table, "Item": item}}

    def _delete(self, key: keys.Key) -> dict[str, Any]:
        return {"Delete": {"TableName": self.table, "Key": keys.wire(key)}}

    # ---- creation -----------------------------------------------------------------------------------

    def create_memory(
        self,
        memory: OrgMemory,
        files: list[tuple[Document, Version]],
        stats: MemoryStats,
        handoff: VersionCheck | None = None,
    ) -> None:
        """The Memory, its name claim, its index entries, its counter row and its first files, in one
        transaction. `handoff` marks the version a promote copies (checked unredacted in the same commit)."""
        steps: list[Step] = [
            ("memory", self._new(kinds.MEMORY_ANY.item(memory))),
            ("name", self._new(kinds.MEMORY_NAME.item(memory))),
            ("index", self._put(kinds.MEMORY_INDEX.item(memory))),
        ]
        if memory.default is not None:
            steps.append(("default", self._put(kinds.MEMORY_DEFAULT.item(memory))))
        meta = {
            "pk": keys.meta(memory.anchor)[0],
            "sk": keys.meta(memory.anchor)[1],
            "doc_count": stats.file_count,
            "bytes": stats.bytesize,
            "written_at": stats.written_at,
        }
        if stats.written_by is not None:
            meta |= author_attributes(stats.written_by, "written_by")
        steps.append(("meta", self._put(marshal(meta))))
        for doc, version in files:
            steps.append(("document", self._new(kinds.DOCUMENT.item(doc))))
            steps.append(("version", self._put(kinds.VERSION.item(version))))
        by_role = {
            "name": lambda _: ApiError(
                "memory_name_taken",
                f"A Memory named {memory.name!r} already exists in this account: pick another name.",
            ),
        }
        if handoff is not None:
            steps.append(("source", self._handoff(handoff)))

            def source_refused(old: dict[str, Any] | None) -> ApiError:
                if old is None or old.get("public_id") != handoff.public_id:
                    return version_not_found(handoff.lock_version)
                return version_redacted(handoff.lock_version)

            by_role["source"] = source_refused
        transact(
            self.ddb, steps, Refusals(by_role, otherwise=lambda: ApiError("already_exists", "That Memory exists."))
        )

    def _handoff(self, need: VersionCheck) -> dict[str, Any]:
        """Mark a version whose object another anchor now holds too (a redaction then leaves the bytes to
        the sweeper), on the condition that it still has them."""
        return {
            "Update": {
                "TableName": self.table,
                "Key": keys.wire(keys.version(need.anchor, need.rest, need.lock_version)),
                "UpdateExpression": "SET #ho = :t",
                "ConditionExpression": "#pid = :pid AND attribute_exists(#ck)",
                "ExpressionAttributeNames": {"#ho": "handed_off", "#pid": "public_id", "#ck": "content_key"},
                "ExpressionAttributeValues": {":t": {"BOOL": True}, ":pid": {"S": need.public_id}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    # ---- the account's indexes ------------------------------------------------------------------------

    def _query(self, pk: str, prefix: str, after: str | None, limit: int | None) -> tuple[list[dict[str, Any]], bool]:
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :p)",
            "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk"},
            "ExpressionAttributeValues": {":pk": {"S": pk}, ":p": {"S": prefix}},
            "ConsistentRead": True,
        }
        if after is not None:
            kwargs["ExclusiveStartKey"] = {"pk": {"S": pk}, "sk": {"S": after}}
        rows: list[dict[str, Any]] = []
        while True:
            if limit is not None:
                kwargs["Limit"] = limit + 1 - len(rows)
            resp = read(lambda: self.ddb.query(**kwargs))
            rows.extend(resp.get("Items", []))
            if limit is not None and len(rows) > limit:
                return rows[:limit], True
            if "LastEvaluatedKey" not in resp:
                return rows, False
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def memory_ids(self, account_id: str, after: str | None, limit: int) -> tuple[list[str], bool]:
        """A page of the account's Memory ids in id order, after the id `after`, and whether more follow."""
        pk = f"{keys.ACCOUNT}{account_id}"
        start = None if after is None else f"{keys.MEMORY_INDEX}{after}"
        rows, more = self._query(pk, keys.MEMORY_INDEX, start, limit)
        return [unmarshal(r)["sk"][len(keys.MEMORY_INDEX) :] for r in rows], more

    def memory_defaults(self, account_id: str) -> list[tuple[str, str, MemoryDefault]]:
        """Every tenant default of the account: (memory id, name, MemoryDefault)."""
        rows, _ = self._query(f"{keys.ACCOUNT}{account_id}", keys.MEMORY_DEFAULT, None, None)
        return [kinds.memory_default_row(r) for r in rows]

    def account_agents(self, account_id: str) -> list[tuple[str, str, str | None]]:
        """Every agent of the account: (id, name, deployment)."""
        rows, _ = self._query(f"{keys.ACCOUNT}{account_id}", keys.AGENT_INDEX, None, None)
        return [kinds.agent_index_row(r) for r in rows]

    def memory_references(self, account_id: str, memory_id: str | None = None) -> list[MemoryReference]:
        """The agents a Memory is attached to (every attachment of the account when no Memory is named)."""
        prefix = keys.MEMORY_REF if memory_id is None else f"{keys.MEMORY_REF}{memory_id}#"
        rows, _ = self._query(f"{keys.ACCOUNT}{account_id}", prefix, None, None)
        return [kinds.MEMORY_REF.read(r) for r in rows]

    def mounted_memories(self, account_id: str, now: float) -> set[str]:
        """The Memories of the account an unexpired execution mounts, in one Query of the mount index (the
        table's TTL removes an expired entry only eventually, so the expiry is checked here)."""
        rows, _ = self._query(f"{keys.ACCOUNT}{account_id}", keys.MEMORY_MOUNT, None, None)
        return {mid for mid, expires_at in map(kinds.memory_mount_row, rows) if expires_at > now}

    # ---- changes of the Memory itself -------------------------------------------------------------------

    def update_memory(self, before: OrgMemory, after: OrgMemory) -> None:
        """Store `after` if the row still holds `before`'s revision (else stale_object); the default's
        index entry follows in the same transaction."""
        steps, refusals = self._memory_update(before, after)
        if len(steps) == 1:
            write_one(self.ddb, steps[0], refusals)
        else:
            transact(self.ddb, steps, refusals)

    def commit_import(self, changes: list[DocumentChange], before: OrgMemory, after: OrgMemory) -> None:
        """A Git import: the Memory's file changes, then its row (`update_memory`'s steps).

        The changes go in as few transactions as DynamoDB's 100 items allow, and the Memory's row rides in
        the last one when it fits (GROUP_SIZE leaves room for it and a keyed request's record): an import of
        up to GROUP_SIZE files lands whole or not at all, in one request. A larger one lands its groups in
        turn, each refusable on its own conditions, and only its last records the commit, so a sync after an
        interrupted one finishes it. Only the transaction with the Memory's row is decisive: it is the one a
        keyed request's record rides in."""
        if not changes:
            self.update_memory(before, after)
            return
        groups = [changes[start : start + GROUP_SIZE] for start in range(0, len(changes), GROUP_SIZE)]
        for group in groups[:-1]:
            steps, refusals = self._group_steps(group)
            transact(self.ddb, steps, refusals, decisive=False)
        row_steps, row_refusals = self._memory_update(before, after)
        steps, refusals = self._group_steps(groups[-1])
        both = Refusals({**refusals.by_role, **row_refusals.by_role}, otherwise=refusals.otherwise)
        transact(self.ddb, steps + row_steps, both)

    def _memory_update(self, before: OrgMemory, after: OrgMemory) -> tuple[list[Step], Refusals]:
        settings = memory_settings(after)
        names = {
            "#pk": "pk",
            "#rev": "revision",
            "#desc": "description",
            "#def": "default",
            "#acc": "access",
            "#arc": "archived",
        }
        values: dict[str, Any] = {
            ":rev": {"N": str(before.revision)},
            ":next": {"N": str(after.revision)},
            ":desc": {"S": after.description},
            ":def": _attribute(settings["default"]),
            ":acc": _attribute(settings["access"]),
            ":arc": {"BOOL": after.archived},
        }
        sets = ["#rev = :next", "#desc = :desc", "#def = :def", "#acc = :acc", "#arc = :arc"]
        if after.git is not None:
            names |= {"#gc": "git_commit", "#gr": "git_ref", "#gp": "git_path"}
            values |= {
                ":gc": _attribute(after.git.commit),
                ":gr": {"S": after.git.ref},
                ":gp": {"S": after.git.path},
            }
            sets += ["#gc = :gc", "#gr = :gr", "#gp = :gp"]
        steps: list[Step] = [
            (
                "memory",
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": keys.wire(keys.memory(after.memory_id)),
                        "UpdateExpression": "SET " + ", ".join(sets),
                        "ConditionExpression": "attribute_exists(#pk) AND #rev = :rev AND attribute_not_exists(#del)",
                        "ExpressionAttributeNames": names | {"#del": "deleting"},
                        "ExpressionAttributeValues": values,
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                },
            )
        ]
        if after.default is not None:
            steps.append(("default", self._put(kinds.MEMORY_DEFAULT.item(after))))
        elif before.default is not None:
            steps.append(("default", self._delete(keys.memory_default(after.account_id, after.memory_id))))

        def refused(old: dict[str, Any] | None) -> ApiError:
            if old is None or old.get("deleting"):
                return _gone()
            return ApiError("stale_object", "The Memory changed while this request ran: read it again and retry.")

        return steps, Refusals({"memory": refused})

    def delete_memory(self, memory: OrgMemory, references: list[MemoryReference], *, final: bool) -> None:
        """Detach the Memory from `references`' agents; with `final`, remove the Memory in the same step.

        The Memory's row is conditioned on the attachment count it had when `references` were read, so an
        attachment made meanwhile refuses the step (stale_object) rather than being left pointing at
        nothing. A step that is not final marks the Memory as being deleted (gone for every reader).
        Its files and versions stay under a tombstoned anchor, for the sweeper, with their bytes.
        """
        left = memory.attachment_count - len(references)
        key = keys.wire(keys.memory(memory.memory_id))
        condition = (
            "attribute_exists(#pk) AND #ac = :ac"
            if memory.attachment_count
            else ("attribute_exists(#pk) AND (attribute_not_exists(#ac) OR #ac = :ac)")
        )
        head: dict[str, Any]
        if final:
            head = {
                "Delete": {
                    "TableName": self.table,
                    "Key": key,
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": {"#pk": "pk", "#ac": "attachment_count"},
                    "ExpressionAttributeValues": {":ac": {"N": str(memory.attachment_count)}},
                }
            }
        else:
            head = {
                "Update": {
                    "TableName": self.table,
                    "Key": key,
                    "UpdateExpression": "SET #ac = :left, #del = :t",
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": {"#pk": "pk", "#ac": "attachment_count", "#del": "deleting"},
                    "ExpressionAttributeValues": {
                        ":ac": {"N": str(memory.attachment_count)},
                        ":left": {"N": str(left)},
                        ":t": {"BOOL": True},
                    },
                }
            }
        steps: list[Step] = [("memory", head)]
        for ref in references:
            steps.append(("edge", self._delete(keys.memory_ref(memory.account_id, memory.memory_id, ref.agent_id))))
            steps.append(
                (
                    "agent",
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": keys.wire(keys.agent(ref.agent_id)),
                            "UpdateExpression": "REMOVE #mems.#m ADD #mr :one",
                            "ConditionExpression": "attribute_exists(#pk)",
                            "ExpressionAttributeNames": {
                                "#pk": "pk",
                                "#mems": "memories",
                                "#m": memory.memory_id,
                                "#mr": "memories_revision",
                            },
                            "ExpressionAttributeValues": {":one": {"N": "1"}},
                        }
                    },
                )
            )
        if final:
            steps.append(("name", self._delete(keys.memory_name(memory.account_id, memory.name))))
            steps.append(("index", self._delete(keys.memory_index(memory.account_id, memory.memory_id))))
            if memory.default is not None:
                steps.append(("default", self._delete(keys.memory_default(memory.account_id, memory.memory_id))))
            steps.append(
                (
                    "meta",
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": keys.wire(keys.meta(memory.anchor)),
                            "UpdateExpression": "SET #del = :now",
                            "ExpressionAttributeNames": {"#del": "deleted_at"},
                            "ExpressionAttributeValues": {":now": {"N": str(int(clock.now()))}},
                        }
                    },
                )
            )

        def changed(_: dict[str, Any] | None) -> ApiError:
            return ApiError(
                "stale_object", "The Memory's attachments changed while it was being deleted: delete it again."
            )

        transact(self.ddb, steps, Refusals({"memory": changed}, otherwise=lambda: changed(None)))

    # ---- attachments ------------------------------------------------------------------------------------

    def replace_attachments(
        self,
        agent: Agent,
        attached: tuple[Attachment, ...],
        added: list[str],
        removed: list[str],
        deployment: str | None,
    ) -> None:
        """Set an agent's list (and deployment) if nobody changed it since `agent` was read; the edges and
        counts of the Memories added and removed move in the same transaction, and each added Memory must
        still exist, unarchived."""
        values: dict[str, Any] = {
            ":next": {"N": str(agent.memories_revision + 1)},
            ":mems": _attribute(attachments_attribute(attached)),
        }
        names = {"#pk": "pk", "#mr": "memories_revision", "#mems": "memories", "#dep": "deployment"}
        if agent.memories_revision:
            cond = "attribute_exists(#pk) AND #mr = :rev"
            values[":rev"] = {"N": str(agent.memories_revision)}
        else:
            cond = "attribute_exists(#pk) AND (attribute_not_exists(#mr) OR #mr = :zero)"
            values[":zero"] = {"N": "0"}
        update = "SET #mr = :next, #mems = :mems"
        if deployment is None:
            update += " REMOVE #dep"
        else:
            update += ", #dep = :dep"
            values[":dep"] = {"S": deployment}
        steps: list[Step] = [
            (
                "agent",
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": keys.wire(keys.agent(agent.public_id)),
                        "UpdateExpression": update,
                        "ConditionExpression": cond,
                        "ExpressionAttributeNames": names,
                        "ExpressionAttributeValues": values,
                    }
                },
            )
        ]
        for memory_id in removed:
            steps.append(("edge", self._delete(keys.memory_ref(agent.account_id, memory_id, agent.public_id))))
            steps.append(("removed", self._count(memory_id, -1, must_be_open=False)))
        for a in attached:
            ref = MemoryReference(a.memory_id, agent.public_id, agent.name, a.mode, a.read_first)
            steps.append(("edge", self._put(kinds.MEMORY_REF.item(ref, account_id=agent.account_id))))
            if a.memory_id in added:
                steps.append((f"added:{a.memory_id}", self._count(a.memory_id, +1, must_be_open=True)))
        if deployment != agent.deployment:
            moved = replace(agent, deployment=deployment)
            steps.append(("index", {"Put": {"TableName": self.table, "Item": kinds.AGENT_INDEX.item(moved)}}))
        by_role: dict[str, Any] = {
            "agent": lambda _: ApiError(
                "stale_object", "The agent's memories changed while this request ran: read the agent again and retry."
            ),
            "removed": lambda _: ApiError("stale_object", "A Memory was deleted while this request ran: retry."),
        }
        for memory_id in added:
            by_role[f"added:{memory_id}"] = _attach_refused(memory_id)
        transact(self.ddb, steps, Refusals(by_role))

    def _count(self, memory_id: str, delta: int, *, must_be_open: bool) -> dict[str, Any]:
        cond = "attribute_exists(#pk) AND attribute_not_exists(#del)"
        names = {"#pk": "pk", "#ac": "attachment_count", "#del": "deleting"}
        values: dict[str, Any] = {":d": {"N": str(delta)}}
        if must_be_open:
            cond += " AND #arc = :f"
            names["#arc"] = "archived"
            values[":f"] = {"BOOL": False}
        return {
            "Update": {
                "TableName": self.table,
                "Key": keys.wire(keys.memory(memory_id)),
                "UpdateExpression": "ADD #ac :d",
                "ConditionExpression": cond,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    # ---- leases -------------------------------------------------------------------------------------------

    def put_lease(self, lease: Lease, anchor_key: str) -> None:
        """Take or extend a lease on one file, unless someone else holds an unexpired one (memory_leased)."""
        anchor = Anchor.from_key(anchor_key)
        write_one(
            self.ddb,
            (
                "lease",
                {
                    "Put": {
                        "TableName": self.table,
                        "Item": kinds.LEASE.item(lease, anchor=anchor.key),
                        **lease_free_for(lease.holder),
                    }
                },
            ),
            Refusals({"lease": leased_refusal}),
        )


def _attach_refused(memory_id: str) -> Any:
    def refused(old: dict[str, Any] | None) -> ApiError:
        if old is None or old.get("deleting"):
            return ApiError("validation_failed", f"agent.memories: no Memory {memory_id} is visible to you.")
        return ApiError(
            "validation_failed", f"agent.memories: Memory {memory_id} is archived: it cannot be newly attached."
        )

    return refused


def _attribute(value: Any) -> dict[str, Any]:
    return attribute(value)
