"""Directory rows: accounts, humans, tokens, workspaces and members, agents, speakers, conversations, executions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_memory.api.errors import ApiError, stale
from agent_memory.core.model import (
    Account,
    Agent,
    Anchor,
    Conversation,
    Execution,
    Human,
    Member,
    Speaker,
    TokenRow,
    Workspace,
)
from agent_memory.store import keys, kinds
from agent_memory.store.clients import Backend
from agent_memory.store.commit import Refusals, Step, attempt, keyed, read, transact, write_one
from agent_memory.store.items import Item, attribute

# Index entries of mounted Memories sent in one transaction with their execution (DynamoDB takes 100 items,
# one of them kept for a keyed request's record).
MOUNT_INDEX_PER_TRANSACTION = 98


def _exists(what: str = "That record already exists.") -> Refusals:
    """Creates: whichever item already existed, the record does."""
    return Refusals(otherwise=lambda: ApiError("already_exists", what))


class DirectoryWrites(Backend):
    """Who is who, and what belongs to whom. Every new row is conditioned on its key being free."""

    def _create(self, role: str, item: Item, refused: Callable[[], ApiError]) -> None:
        write_one(self.ddb, (role, self._new(item)), Refusals({role: lambda _: refused()}))

    def create_account(self, account: Account, human: Human, token: TokenRow) -> None:
        steps: list[Step] = [
            ("account", self._new(kinds.ACCOUNT.item(account))),
            ("human", self._new(kinds.HUMAN.item(human))),
            ("token", self._new(kinds.TOKEN.item(token))),
        ]
        transact(self.ddb, steps, _exists())

    def create_human(self, human: Human, token: TokenRow) -> None:
        steps: list[Step] = [
            ("human", self._new(kinds.HUMAN.item(human))),
            ("token", self._new(kinds.TOKEN.item(token))),
        ]
        transact(self.ddb, steps, _exists())

    def create_workspace(self, workspace: Workspace, member: Member) -> None:
        steps: list[Step] = [
            ("workspace", self._new(kinds.WORKSPACE.item(workspace))),
            ("member", self._new(kinds.MEMBER.item(member))),
        ]
        transact(self.ddb, steps, _exists())

    def put_member(self, member: Member) -> None:
        # A second invitation changes the role: membership is a setting, not an event.
        write_one(
            self.ddb, ("member", {"Put": {"TableName": self.table, "Item": kinds.MEMBER.item(member)}}), Refusals()
        )

    def create_conversation(self, conversation: Conversation) -> None:
        # The workspace's index of its conversations is written with the conversation, in one transaction.
        steps: list[Step] = [
            ("conversation", self._new(kinds.CONVERSATION_ANY.item(conversation))),
            ("room", {"Put": {"TableName": self.table, "Item": kinds.ROOM_CONVERSATION.item(conversation)}}),
        ]
        transact(self.ddb, steps, _exists("That conversation already exists."))

    def room_conversations(self, workspace_id: str, after: str | None, limit: int) -> tuple[list[str], bool]:
        """Up to `limit` conversation ids of a workspace, oldest first, after `after`; and whether more follow."""
        pk, _ = keys.workspace(workspace_id)
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :ref)",
            "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk"},
            "ExpressionAttributeValues": {":pk": {"S": pk}, ":ref": {"S": keys.ROOM_CONVERSATION}},
            "Limit": limit + 1,
            "ConsistentRead": True,
        }
        if after:
            kwargs["ExclusiveStartKey"] = keys.wire(keys.room_conversation(workspace_id, after))
        resp = read(lambda: self.ddb.query(**kwargs))
        ids = [item["sk"]["S"][len(keys.ROOM_CONVERSATION) :] for item in resp.get("Items", [])]
        return ids[:limit], len(ids) > limit

    def create_agent(self, agent: Agent, token: TokenRow | None) -> None:
        """Refuses `already_exists` when a definition of that name exists under the steward."""
        steps: list[Step] = [("agent", self._new(kinds.AGENT.item(agent)))]
        # The account's index of its agents: who a tenant default reaches, by name.
        steps.append(("index", {"Put": {"TableName": self.table, "Item": kinds.AGENT_INDEX.item(agent)}}))
        if agent.kind == "definition":
            steps.append(("defname", self._new(kinds.DEFINITION.item(agent))))
        if token is not None:
            steps.append(("token", self._new(kinds.TOKEN.item(token))))
        transact(self.ddb, steps, _exists(f"You already steward an agent definition named {agent.name!r}."))

    def find_definition(self, steward_id: str, name: str) -> str | None:
        """The agent id of a steward's named definition, if any."""
        resp = read(
            lambda: self.ddb.get_item(
                TableName=self.table, Key=keys.wire(keys.definition(steward_id, name)), ConsistentRead=True
            )
        )
        return kinds.definition_row(resp["Item"]) if "Item" in resp else None

    def rotate_agent_token(self, agent: Agent, old_digest: str | None, new: TokenRow) -> None:
        self._swap_token(keys.agent(agent.public_id), old_digest, new)

    def rotate_human_token(self, human: Human, old_digest: str | None, new: TokenRow, caller_digest: str) -> None:
        self._swap_token(keys.human(human.public_id), old_digest, new, caller_digest)

    def revoke_human_token(self, human: Human, old_digest: str | None, caller_digest: str) -> None:
        self._swap_token(keys.human(human.public_id), old_digest, None, caller_digest)

    def _swap_token(
        self, principal: keys.Key, old_digest: str | None, new: TokenRow | None, caller_digest: str | None = None
    ) -> None:
        """Point a principal at a new token (or none) and retire the old one, in one transaction.

        Conditioned on the digest the caller read: two racing rotations must not both succeed, or the
        loser's token would stay valid with no row pointing at it; the loser mints nothing.
        """
        names = {"#pk": "pk", "#td": "token_digest"}
        values: dict[str, Any] = {}
        if old_digest:
            values[":old"] = {"S": old_digest}
        update: dict[str, Any] = {
            "TableName": self.table,
            "Key": keys.wire(principal),
            "UpdateExpression": "REMOVE #td",
            "ConditionExpression": "attribute_exists(#pk) AND #td = :old"
            if old_digest
            else "attribute_exists(#pk) AND attribute_not_exists(#td)",
            "ExpressionAttributeNames": names,
        }
        steps: list[Step] = [("principal", {"Update": update})]
        if new is not None:
            update["UpdateExpression"] = "SET #td = :new"
            values[":new"] = {"S": new.digest}
            steps.append(("token", self._new(kinds.TOKEN.item(new))))
        if values:
            update["ExpressionAttributeValues"] = values
        if old_digest and old_digest != caller_digest:
            steps.append(("old_token", {"Delete": {"TableName": self.table, "Key": keys.wire(keys.token(old_digest))}}))
        if caller_digest:
            # The caller's own token must still stand when this commits: a rotation that retired it
            # meanwhile (a Human racing itself) wins, and this one mints nothing.
            check: dict[str, Any] = {
                "TableName": self.table,
                "Key": keys.wire(keys.token(caller_digest)),
                "ConditionExpression": "attribute_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": "pk"},
            }
            if old_digest == caller_digest:
                steps.append(("caller", {"Delete": check}))
            else:
                steps.append(("caller", {"ConditionCheck": check}))
        transact(
            self.ddb,
            steps,
            Refusals(
                otherwise=lambda: stale(
                    "The credential was changed by another request at the same moment; "
                    "use the token that request returned, or try again."
                )
            ),
        )

    def create_speaker(self, speaker: Speaker) -> None:
        self._create(
            "speaker", kinds.SPEAKER.item(speaker), lambda: ApiError("already_exists", "That speaker already exists.")
        )

    def create_execution(self, execution: Execution) -> None:
        """Store a new execution row; it is never updated afterwards (its configuration is frozen). With
        mounts, the account's index entry of each Memory it mounts is written in the same transaction (what
        keeps a mounted Memory off the memory map's orphans while the execution lives)."""

        def taken() -> ApiError:
            return ApiError("already_exists", "That execution already exists.")

        index: list[Step] = [
            ("mount", {"Put": {"TableName": self.table, "Item": it}}) for it in kinds.memory_mount_items(execution)
        ]
        if not index:
            self._create("execution", kinds.EXECUTION.item(execution), taken)
            return
        # A transaction holds MOUNT_INDEX_PER_TRANSACTION entries beside the execution (and a keyed request's
        # record): an agent with more Memories than that has the rest written ahead of it, so no execution is
        # ever without its index (an entry whose execution then failed only lapses at the same expiry).
        ahead, index = index[:-MOUNT_INDEX_PER_TRANSACTION], index[-MOUNT_INDEX_PER_TRANSACTION:]
        for start in range(0, len(ahead), MOUNT_INDEX_PER_TRANSACTION):
            transact(self.ddb, ahead[start : start + MOUNT_INDEX_PER_TRANSACTION], Refusals(), decisive=False)
        steps: list[Step] = [("execution", self._new(kinds.EXECUTION.item(execution))), *index]
        transact(self.ddb, steps, Refusals({"execution": lambda _: taken()}))

    def stop_execution(self, execution: Execution, stopped_by: str, at: float, keep_until: int) -> None:
        """The stop mark, one unconditional update: the first stop's time and author stay (if_not_exists), so
        stopping again, or two stops at once, changes nothing anyone reads."""
        pk, sk = keys.execution_stop(execution.public_id)
        op = {
            "TableName": self.table,
            "Key": keys.wire((pk, sk)),
            "UpdateExpression": "SET #at = if_not_exists(#at, :at), #by = if_not_exists(#by, :by), #exp = :exp",
            "ExpressionAttributeNames": {"#at": "stopped_at", "#by": "stopped_by", "#exp": "expires_at"},
            "ExpressionAttributeValues": {
                ":at": {"N": str(int(at))},
                ":by": {"S": stopped_by},
                ":exp": {"N": str(keep_until)},
            },
        }
        write_one(self.ddb, ("stop", {"Update": op}), Refusals())

    def delete_conversation(self, conversation: Conversation, deleted_by: str, at: float) -> None:
        """One transaction of three items, whatever the conversation holds: the tombstone on its row (every
        reader sees it absent from then on, and every commit that moves the row refuses), the mark on its
        anchor's `#META` row (created if the conversation never held a document) that hands the anchor's
        rows to the sweeper, and the removal of the workspace's index entry (an export walks no more)."""
        names = {"#pk": "pk", "#del": "deleted_at"}
        tombstone = {
            "TableName": self.table,
            "Key": keys.wire(keys.conversation(conversation.public_id)),
            "UpdateExpression": "SET #del = :at, #by = :by",
            "ConditionExpression": "attribute_exists(#pk) AND attribute_not_exists(#del)",
            "ExpressionAttributeNames": {**names, "#by": "deleted_by"},
            "ExpressionAttributeValues": {":at": {"N": str(int(at))}, ":by": {"S": deleted_by}},
        }
        mark = {
            "TableName": self.table,
            "Key": keys.wire(keys.meta(Anchor("conversation", conversation.public_id))),
            "UpdateExpression": "SET #del = :at",
            "ExpressionAttributeNames": {"#del": "deleted_at"},
            "ExpressionAttributeValues": {":at": {"N": str(int(at))}},
        }
        room = {
            "TableName": self.table,
            "Key": keys.wire(keys.room_conversation(conversation.workspace_id, conversation.public_id)),
        }
        steps: list[Step] = [
            ("conversation", {"Update": tombstone}),
            ("meta", {"Update": mark}),
            ("room", {"Delete": room}),
        ]
        transact(
            self.ddb,
            steps,
            Refusals({"conversation": lambda _: ApiError("not_found", "No conversation with that id is visible.")}),
        )

    def update_workspace_overrides(self, workspace_id: str, overrides: dict[str, str]) -> None:
        op = {
            "TableName": self.table,
            "Key": keys.wire(keys.workspace(workspace_id)),
            "UpdateExpression": "SET #tpo = :o",
            "ConditionExpression": "attribute_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": "pk", "#tpo": "tool_provider_overrides"},
            "ExpressionAttributeValues": {":o": attribute(overrides)},
        }
        write_one(
            self.ddb,
            ("workspace", {"Update": op}),
            Refusals({"workspace": lambda _: ApiError("not_found", "That workspace does not exist.")}),
        )

    def update_workspace_dedup(self, workspace_id: str, enabled: bool) -> None:
        op = {
            "TableName": self.table,
            "Key": keys.wire(keys.workspace(workspace_id)),
            "UpdateExpression": "SET #d = :d",
            "ConditionExpression": "attribute_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": "pk", "#d": "dedup_enabled"},
            "ExpressionAttributeValues": {":d": {"BOOL": enabled}},
        }
        write_one(
            self.ddb,
            ("workspace", {"Update": op}),
            Refusals({"workspace": lambda _: ApiError("not_found", "That workspace does not exist.")}),
        )

    def update_conversation(
        self,
        conversation_id: str,
        *,
        memory_context: dict[str, Any] | None = None,
        set_memory_context: bool = False,
        archive: bool = False,
        bump: bool = False,
        expected_context_revision: int | None = None,
        forked_at: float | None = None,
    ) -> Conversation | None:
        """Conditionally update a conversation; `bump` moves context_revision in the same request;
        `forked_at` marks it as forked from then on (a fork, before it reads the rows it copies). Answers
        the updated row, or None under a keyed request (whose caller settled its answer already)."""
        sets: list[str] = []
        # A deleted conversation's tombstone takes no change: it reads as absent, and so is refused as absent.
        names = {"#pk": "pk", "#del": "deleted_at"}
        values: dict[str, Any] = {}
        cond = ["attribute_exists(#pk)", "attribute_not_exists(#del)"]
        if forked_at is not None:
            sets.append("#fa = :fa")
            names["#fa"] = "forked_at"
            values[":fa"] = {"N": str(int(forked_at))}
        if set_memory_context:
            sets += ["#mc = :mc", "#hmc = :hmc"]
            names |= {"#mc": "memory_context", "#hmc": "has_memory_context", "#ar": "archived"}
            values[":mc"] = attribute(memory_context)
            values[":hmc"] = {"BOOL": memory_context is not None}
            # An archive landing between the caller's read and this write must win: configuration of an
            # archived conversation is read-only.
            cond.append("#ar = :f")
            values[":f"] = {"BOOL": False}
        if archive:
            sets.append("#ar = :t")
            names["#ar"] = "archived"
            values[":t"] = {"BOOL": True}
        if bump:
            sets.append("#cr = #cr + :one")
            names["#cr"] = "context_revision"
            values[":one"] = {"N": "1"}
        if expected_context_revision is not None:
            cond.append("#cr = :ecr")
            names["#cr"] = "context_revision"
            values[":ecr"] = {"N": str(expected_context_revision)}
        if not sets:
            raise ValueError("nothing to update")

        def refused(old: dict[str, Any] | None) -> ApiError:
            if old is None or old.get("deleted_at") is not None:
                return ApiError("not_found", "That conversation does not exist.")
            if set_memory_context and old.get("archived"):
                return ApiError(
                    "conversation_archived", "The conversation is archived: its configuration is read-only."
                )
            return ApiError(
                "stale_object", "The conversation's context_revision moved since you read it: read it again."
            )

        op = {
            "TableName": self.table,
            "Key": keys.wire(keys.conversation(conversation_id)),
            "UpdateExpression": "SET " + ", ".join(sets),
            "ConditionExpression": " AND ".join(cond),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if keyed():
            # A keyed request's record rides with the update in one transaction; its caller knows the row.
            write_one(self.ddb, ("conversation", {"Update": op}), Refusals({"conversation": refused}))
            return None
        resp = attempt(
            lambda: self.ddb.update_item(**op, ReturnValues="ALL_NEW"),
            ["conversation"],
            Refusals({"conversation": refused}),
        )
        return kinds.CONVERSATION_ANY.read(resp["Attributes"])
