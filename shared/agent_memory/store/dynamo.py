"""DynamoDB + S3 storage. Knows items, keys and conditions; knows nothing of HTTP.

Single-table layout (pk / sk):
    TOKEN#<sha256>        TOKEN            the principal a bearer token stands for
    ACCOUNT#<id>          ACCOUNT
    HUMAN#<id>            HUMAN
    AGENT#<id>            AGENT            steward, kind, memory_context_limit, current token digest
    STEWARD#<human>       DEFNAME#<name>   claims a definition name, unique per steward
    SPEAKER#<id>          SPEAKER
    WS#<id>               WS               settings (tool_provider_overrides)
    WS#<id>               MEMBER#<id>      role of a human or agent in the workspace
    CONV#<id>             CONV             context_revision, archived, memory_context, answering agent
    EXEC#<id>             EXEC             an execution: principal, answerer, subject, frozen bindings, tools
    ANCHOR#<anchor>       #META            doc_count: the 64-document bound, moved in the same transaction
    ANCHOR#<anchor>       DOC#<path>       a document pointer row -> immutable S3 content key
    FORKLOG#<utc hour>    <time>#<child>   content keys a fork copied, for the sweeper (expires by TTL)

Content lives in S3 under keys that are never reused, so a read can cache it forever by key.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from ..errors import ApiError, stale
from ..lru import Lru
from ..model import (
    MAX_DOCUMENTS_PER_ANCHOR,
    Account,
    Agent,
    Anchor,
    Conversation,
    Document,
    DocumentChange,
    Execution,
    FrozenBinding,
    Human,
    Member,
    Speaker,
    TokenRow,
    Workspace,
    WriteBudget,
)
from ..ports import Ref

_ser = TypeSerializer()
_deser = TypeDeserializer()


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def marshal(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _ser.serialize(v) for k, v in item.items() if v is not None}


def _value(v: Any) -> Any:
    # Strings, whole numbers and booleans are nearly every attribute we read; decoding them here skips
    # TypeDeserializer's dispatch and Decimal, which cost ~3 µs per attribute (tests/bench.py: half of
    # list's own time). Anything else takes the general path.
    if "S" in v:
        return v["S"]
    if "N" in v:
        n = v["N"]
        if n.isascii() and (n.isdigit() or (n[:1] == "-" and n[1:].isdigit())):
            return int(n)
    elif "BOOL" in v:
        return v["BOOL"]
    return _plain(_deser.deserialize(v))


def unmarshal(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _value(v) for k, v in item.items()}


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


# ---- row <-> item -------------------------------------------------------------------------------


def _doc_item(d: Document) -> dict[str, Any]:
    return {
        "pk": f"ANCHOR#{d.anchor.key}",
        "sk": f"DOC#{d.rest}",
        "public_id": d.public_id,
        "lock_version": d.lock_version,
        "bytesize": d.bytesize,
        "sha256": d.sha256,
        "description": d.description,
        "written_at": d.written_at,
        "content_key": d.content_key,
        "author": d.author,
    }


def doc_attributes(d: Document, anchor: Anchor | None = None) -> dict[str, Any]:
    """`marshal(_doc_item(d))` built directly (under `anchor` instead of its own when given): TypeSerializer
    costs ~18 us an item, which a 64-row fork would otherwise pay 64 times (tests/unit/test_fork_log.py
    holds the two equal)."""
    item: dict[str, Any] = {
        "pk": {"S": f"ANCHOR#{(anchor or d.anchor).key}"},
        "sk": {"S": f"DOC#{d.rest}"},
        "public_id": {"S": d.public_id},
        "lock_version": {"N": str(d.lock_version)},
        "bytesize": {"N": str(d.bytesize)},
        "sha256": {"S": d.sha256},
        "written_at": {"S": d.written_at},
        "content_key": {"S": d.content_key},
        "author": {"S": d.author},
    }
    if d.description is not None:
        item["description"] = {"S": d.description}
    return item


def doc_from_attributes(it: dict[str, Any], anchor: Anchor | None = None) -> Document:
    """`_doc_row(unmarshal(it))` read directly, for listings (a fork's Query reads 64 rows) where the anchor
    is already known; any attribute of an unexpected type falls back to the generic path."""
    try:
        return Document(
            anchor=anchor or Anchor.from_key(it["pk"]["S"][len("ANCHOR#") :]),
            rest=it["sk"]["S"][len("DOC#") :],
            public_id=it["public_id"]["S"],
            lock_version=int(it["lock_version"]["N"]),
            bytesize=int(it["bytesize"]["N"]),
            sha256=it["sha256"]["S"],
            description=it["description"]["S"] if "description" in it else None,
            written_at=it["written_at"]["S"],
            content_key=it["content_key"]["S"],
            author=it["author"]["S"] if "author" in it else "",
        )
    except (KeyError, ValueError):
        return _doc_row(unmarshal(it))


def _doc_row(it: dict[str, Any]) -> Document:
    return Document(
        anchor=Anchor.from_key(it["pk"][len("ANCHOR#") :]),
        rest=it["sk"][len("DOC#") :],
        public_id=it["public_id"],
        lock_version=it["lock_version"],
        bytesize=it["bytesize"],
        sha256=it["sha256"],
        description=it.get("description"),
        written_at=it["written_at"],
        content_key=it["content_key"],
        author=it.get("author", ""),
    )


def _conv_item(c: Conversation) -> dict[str, Any]:
    return {
        "pk": f"CONV#{c.public_id}",
        "sk": "CONV",
        "workspace_id": c.workspace_id,
        "account_id": c.account_id,
        "created_by": c.created_by,
        "created_at": c.created_at,
        "context_revision": c.context_revision,
        "archived": c.archived,
        "memory_context": c.memory_context,
        "has_memory_context": c.memory_context is not None,
        "answering_agent_id": c.answering_agent_id,
        "parent_public_id": c.parent_public_id,
    }


def _conv_row(it: dict[str, Any]) -> Conversation:
    return Conversation(
        public_id=it["pk"][len("CONV#") :],
        workspace_id=it["workspace_id"],
        account_id=it["account_id"],
        created_by=it["created_by"],
        created_at=it["created_at"],
        context_revision=it["context_revision"],
        archived=it["archived"],
        memory_context=it.get("memory_context") if it.get("has_memory_context") else None,
        answering_agent_id=it.get("answering_agent_id"),
        parent_public_id=it.get("parent_public_id"),
    )


def frozen_item(b: FrozenBinding) -> dict[str, Any]:
    """An execution's stored root. The keys are the stored schema: rows written before stay readable."""
    out: dict[str, Any] = {"name": b.name, "scope": b.scope, "access": b.access, "anchor_public_id": b.anchor_public_id}
    if b.conversation_public_id:
        out["conversation_public_id"] = b.conversation_public_id
    if b.agent_public_id:
        out["agent_public_id"] = b.agent_public_id
    if b.speaker_public_id:
        out["speaker_public_id"] = b.speaker_public_id
    return out


def frozen_row(it: dict[str, Any]) -> FrozenBinding:
    return FrozenBinding(
        name=it["name"],
        scope=it["scope"],
        access=it["access"],
        anchor_public_id=it["anchor_public_id"],
        conversation_public_id=it.get("conversation_public_id"),
        speaker_public_id=it.get("speaker_public_id") if it["scope"] == "speaker" else None,
        agent_public_id=it.get("agent_public_id"),
    )


def _exec_item(e: Execution) -> dict[str, Any]:
    return {
        "pk": f"EXEC#{e.public_id}",
        "sk": "EXEC",
        "workspace_id": e.workspace_id,
        "conversation_id": e.conversation_id,
        "account_id": e.account_id,
        "agent_id": e.agent_id,
        "principal_kind": e.principal_kind,
        "principal_id": e.principal_id,
        "speaker_id": e.speaker_id,
        "bindings": [frozen_item(b) for b in e.bindings],
        "tools": e.tools,
        "created_at": e.created_at,
        "parent_id": e.parent_id,
    }


def _exec_row(it: dict[str, Any]) -> Execution:
    return Execution(
        public_id=it["pk"][len("EXEC#") :],
        workspace_id=it["workspace_id"],
        conversation_id=it["conversation_id"],
        account_id=it["account_id"],
        agent_id=it.get("agent_id"),
        principal_kind=it["principal_kind"],
        principal_id=it["principal_id"],
        speaker_id=it.get("speaker_id"),
        bindings=[frozen_row(b) for b in it.get("bindings") or []],
        tools=list(it.get("tools") or []),
        created_at=it["created_at"],
        parent_id=it.get("parent_id"),
    )


def _ws_row(it: dict[str, Any]) -> Workspace:
    return Workspace(
        public_id=it["pk"][len("WS#") :],
        account_id=it["account_id"],
        name=it["name"],
        created_at=it["created_at"],
        tool_provider_overrides=it.get("tool_provider_overrides") or {},
    )


def _agent_row(it: dict[str, Any]) -> Agent:
    return Agent(
        public_id=it["pk"][len("AGENT#") :],
        account_id=it["account_id"],
        steward_id=it["steward_id"],
        name=it["name"],
        kind=it["kind"],
        memory_context_limit=it.get("memory_context_limit") if it.get("has_limit") else None,
        created_at=it["created_at"],
        token_digest=it.get("token_digest"),
    )


_PARSERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "token": lambda it: TokenRow(it["pk"][len("TOKEN#") :], it["principal_kind"], it["principal_id"], it["account_id"]),
    "workspace": _ws_row,
    "member": lambda it: Member(
        it["pk"][len("WS#") :], it["principal_kind"], it["principal_id"], it["role"], it["created_at"]
    ),
    "conversation": _conv_row,
    "agent": _agent_row,
    "speaker": lambda it: Speaker(
        it["pk"][len("SPEAKER#") :], it["account_id"], it["agent_id"], it["name"], it["created_at"]
    ),
    "human": lambda it: Human(it["pk"][len("HUMAN#") :], it["account_id"], it["name"], it["created_at"]),
    "document": _doc_row,
    "execution": _exec_row,
}


def _ref_key(ref: Ref) -> tuple[str, str]:
    match ref.kind:
        case "token":
            return f"TOKEN#{ref.a}", "TOKEN"
        case "workspace":
            return f"WS#{ref.a}", "WS"
        case "member":
            return f"WS#{ref.a}", f"MEMBER#{ref.b}"
        case "conversation":
            return f"CONV#{ref.a}", "CONV"
        case "agent":
            return f"AGENT#{ref.a}", "AGENT"
        case "speaker":
            return f"SPEAKER#{ref.a}", "SPEAKER"
        case "human":
            return f"HUMAN#{ref.a}", "HUMAN"
        case "document":
            return f"ANCHOR#{ref.a}", f"DOC#{ref.b}"
        case "execution":
            return f"EXEC#{ref.a}", "EXEC"
    raise ValueError(f"unknown ref kind {ref.kind}")


class ContentCache(Lru[str]):
    """Process-wide LRU of immutable content, bounded in bytes. Safe because keys are never rewritten."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        # A str may hold up to 4 bytes a character, plus the entry's own overhead.
        super().__init__(max_bytes, lambda text: len(text) * 4 + 100)


CACHE = ContentCache()
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="am-io")
        return _POOL


def _reason_codes(exc: ClientError) -> list[dict[str, Any]]:
    reasons: list[dict[str, Any]] = exc.response.get("CancellationReasons") or []  # type: ignore[assignment]
    return reasons


class DynamoStore:
    """The production store: one DynamoDB table and one S3 bucket."""

    def __init__(self, ddb: Any, s3: Any, table: str, bucket: str) -> None:
        self.ddb = ddb
        self.s3 = s3
        self.table = table
        self.bucket = bucket

    # ---- batch reads ----------------------------------------------------------------------------

    def get_many(self, refs: list[Ref]) -> dict[Ref, Any]:
        unique = list(dict.fromkeys(refs))
        out: dict[Ref, Any] = dict.fromkeys(unique)
        if not unique:
            return out
        by_key = {_ref_key(r): r for r in unique}
        if len(unique) == 1:
            (ref,) = unique
            pk, sk = _ref_key(ref)
            resp = self.ddb.get_item(TableName=self.table, Key=_key(pk, sk), ConsistentRead=True)
            if "Item" in resp:
                out[ref] = _PARSERS[ref.kind](unmarshal(resp["Item"]))
            return out
        pending = [_key(pk, sk) for pk, sk in by_key]
        while pending:
            chunk, pending = pending[:100], pending[100:]
            request: dict[str, Any] = {self.table: {"Keys": chunk, "ConsistentRead": True}}
            while request:
                resp = self.ddb.batch_get_item(RequestItems=request)
                for raw in resp.get("Responses", {}).get(self.table, []):
                    item = unmarshal(raw)
                    ref = by_key[(item["pk"], item["sk"])]
                    out[ref] = _PARSERS[ref.kind](item)
                request = resp.get("UnprocessedKeys") or {}
        return out

    def get(self, ref: Ref) -> Any:
        return self.get_many([ref])[ref]

    # ---- directory ------------------------------------------------------------------------------

    def _put(self, item: dict[str, Any], *, new: bool = True) -> dict[str, Any]:
        op: dict[str, Any] = {"TableName": self.table, "Item": marshal(item)}
        if new:
            op["ConditionExpression"] = "attribute_not_exists(pk)"
        return {"Put": op}

    def _transact(self, ops: list[dict[str, Any]]) -> None:
        try:
            self.ddb.transact_write_items(TransactItems=ops)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "TransactionCanceledException":
                raise ApiError("already_exists", "That record already exists.") from exc
            raise

    @staticmethod
    def _token_item(t: TokenRow) -> dict[str, Any]:
        return {
            "pk": f"TOKEN#{t.digest}",
            "sk": "TOKEN",
            "principal_kind": t.principal_kind,
            "principal_id": t.principal_id,
            "account_id": t.account_id,
        }

    @staticmethod
    def _human_item(h: Human) -> dict[str, Any]:
        return {
            "pk": f"HUMAN#{h.public_id}",
            "sk": "HUMAN",
            "account_id": h.account_id,
            "name": h.name,
            "created_at": h.created_at,
        }

    def create_account(self, account: Account, human: Human, token: TokenRow) -> None:
        self._transact(
            [
                self._put(
                    {
                        "pk": f"ACCOUNT#{account.public_id}",
                        "sk": "ACCOUNT",
                        "name": account.name,
                        "created_at": account.created_at,
                    }
                ),
                self._put(self._human_item(human)),
                self._put(self._token_item(token)),
            ]
        )

    def create_human(self, human: Human, token: TokenRow) -> None:
        self._transact([self._put(self._human_item(human)), self._put(self._token_item(token))])

    @staticmethod
    def _member_item(m: Member) -> dict[str, Any]:
        return {
            "pk": f"WS#{m.workspace_id}",
            "sk": f"MEMBER#{m.principal_id}",
            "principal_kind": m.principal_kind,
            "principal_id": m.principal_id,
            "role": m.role,
            "created_at": m.created_at,
        }

    def create_workspace(self, workspace: Workspace, member: Member) -> None:
        self._transact(
            [
                self._put(
                    {
                        "pk": f"WS#{workspace.public_id}",
                        "sk": "WS",
                        "account_id": workspace.account_id,
                        "name": workspace.name,
                        "created_at": workspace.created_at,
                        "tool_provider_overrides": workspace.tool_provider_overrides,
                    }
                ),
                self._put(self._member_item(member)),
            ]
        )

    def put_member(self, member: Member) -> None:
        # A second invitation changes the role: membership is a setting, not an event.
        self.ddb.put_item(TableName=self.table, Item=marshal(self._member_item(member)))

    def create_conversation(self, conversation: Conversation) -> None:
        self.ddb.put_item(
            TableName=self.table,
            Item=marshal(_conv_item(conversation)),
            ConditionExpression="attribute_not_exists(pk)",
        )

    @staticmethod
    def _agent_item(agent: Agent) -> dict[str, Any]:
        return {
            "pk": f"AGENT#{agent.public_id}",
            "sk": "AGENT",
            "account_id": agent.account_id,
            "steward_id": agent.steward_id,
            "name": agent.name,
            "kind": agent.kind,
            "memory_context_limit": agent.memory_context_limit,
            "has_limit": agent.memory_context_limit is not None,
            "created_at": agent.created_at,
            "token_digest": agent.token_digest,
        }

    def create_agent(self, agent: Agent, token: TokenRow | None) -> None:
        ops = [self._put(self._agent_item(agent))]
        if agent.kind == "definition":
            ops.append(
                self._put(
                    {"pk": f"STEWARD#{agent.steward_id}", "sk": f"DEFNAME#{agent.name}", "agent_id": agent.public_id}
                )
            )
        if token is not None:
            ops.append(self._put(self._token_item(token)))
        try:
            self.ddb.transact_write_items(TransactItems=ops)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "TransactionCanceledException":
                raise ApiError(
                    "already_exists", f"You already steward an agent definition named {agent.name!r}."
                ) from exc
            raise

    def find_definition(self, steward_id: str, name: str) -> str | None:
        resp = self.ddb.get_item(
            TableName=self.table, Key=_key(f"STEWARD#{steward_id}", f"DEFNAME#{name}"), ConsistentRead=True
        )
        return unmarshal(resp["Item"])["agent_id"] if "Item" in resp else None

    def rotate_agent_token(self, agent: Agent, old_digest: str | None, new: TokenRow) -> None:
        ops: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": _key(f"AGENT#{agent.public_id}", "AGENT"),
                    "UpdateExpression": "SET token_digest = :new",
                    # Conditioned on the digest this rotation read: two racing rotations must not both
                    # succeed, or the loser's token would stay valid with no row pointing at it.
                    "ConditionExpression": "attribute_exists(pk) AND token_digest = :old"
                    if old_digest
                    else "attribute_exists(pk) AND attribute_not_exists(token_digest)",
                    "ExpressionAttributeValues": {":new": {"S": new.digest}}
                    | ({":old": {"S": old_digest}} if old_digest else {}),
                }
            },
            self._put(self._token_item(new)),
        ]
        if old_digest:
            ops.append({"Delete": {"TableName": self.table, "Key": _key(f"TOKEN#{old_digest}", "TOKEN")}})
        try:
            self.ddb.transact_write_items(TransactItems=ops)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "TransactionCanceledException":
                raise stale(
                    "The credential was rotated by another request at the same moment; "
                    "use the token that request returned, or rotate again."
                ) from exc
            raise

    def create_speaker(self, speaker: Speaker) -> None:
        self.ddb.put_item(
            TableName=self.table,
            Item=marshal(
                {
                    "pk": f"SPEAKER#{speaker.public_id}",
                    "sk": "SPEAKER",
                    "account_id": speaker.account_id,
                    "agent_id": speaker.agent_id,
                    "name": speaker.name,
                    "created_at": speaker.created_at,
                }
            ),
            ConditionExpression="attribute_not_exists(pk)",
        )

    def create_execution(self, execution: Execution) -> None:
        self.ddb.put_item(
            TableName=self.table,
            Item=marshal(_exec_item(execution)),
            ConditionExpression="attribute_not_exists(pk)",
        )

    def update_workspace_overrides(self, workspace_id: str, overrides: dict[str, str]) -> Workspace:
        try:
            resp = self.ddb.update_item(
                TableName=self.table,
                Key=_key(f"WS#{workspace_id}", "WS"),
                UpdateExpression="SET tool_provider_overrides = :o",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={":o": _ser.serialize(overrides)},
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ApiError("not_found", "That workspace does not exist.") from exc
            raise
        return _ws_row(unmarshal(resp["Attributes"]))

    def update_conversation(
        self,
        conversation_id: str,
        *,
        memory_context: dict[str, Any] | None = None,
        set_memory_context: bool = False,
        archive: bool = False,
        bump: bool = False,
        expected_context_revision: int | None = None,
    ) -> Conversation:
        sets: list[str] = []
        values: dict[str, Any] = {}
        cond = ["attribute_exists(pk)"]
        if set_memory_context:
            sets += ["memory_context = :mc", "has_memory_context = :hmc"]
            values[":mc"] = _ser.serialize(memory_context)
            values[":hmc"] = {"BOOL": memory_context is not None}
        if archive:
            sets.append("archived = :t")
            values[":t"] = {"BOOL": True}
        if bump:
            sets.append("context_revision = context_revision + :one")
            values[":one"] = {"N": "1"}
        if expected_context_revision is not None:
            cond.append("context_revision = :ecr")
            values[":ecr"] = {"N": str(expected_context_revision)}
        if not sets:
            raise ValueError("nothing to update")
        try:
            resp = self.ddb.update_item(
                TableName=self.table,
                Key=_key(f"CONV#{conversation_id}", "CONV"),
                UpdateExpression="SET " + ", ".join(sets),
                ConditionExpression=" AND ".join(cond),
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                old = exc.response.get("Item")
                if not old:
                    raise ApiError("not_found", "That conversation does not exist.") from exc
                raise ApiError(
                    "stale_object",
                    "The conversation's context_revision moved since you read it: read it again.",
                ) from exc
            raise
        return _conv_row(unmarshal(resp["Attributes"]))

    # ---- documents ------------------------------------------------------------------------------

    def list_documents(self, anchor: Anchor) -> list[Document]:
        docs: list[Document] = []
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :doc)",
            "ExpressionAttributeValues": {":pk": {"S": f"ANCHOR#{anchor.key}"}, ":doc": {"S": "DOC#"}},
            "ConsistentRead": True,
        }
        while True:
            resp = self.ddb.query(**kwargs)
            docs.extend(doc_from_attributes(it, anchor) for it in resp.get("Items", []))
            if "LastEvaluatedKey" not in resp:
                return docs
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def list_many(self, anchors: list[Anchor]) -> dict[Anchor, list[Document]]:
        unique = list(dict.fromkeys(anchors))
        if len(unique) <= 1:
            return {a: self.list_documents(a) for a in unique}
        # The calling thread queries the first anchor itself while the pool queries the rest: the same
        # parallelism with one thread hand-off fewer (each costs ~0.1 ms of CPU, measured by tests/bench.py).
        pending = [(a, _pool().submit(self.list_documents, a)) for a in unique[1:]]
        out = {unique[0]: self.list_documents(unique[0])}
        out.update((a, f.result()) for a, f in pending)
        return out

    def read_content(self, key: str) -> str:
        cached = CACHE.get(key)
        if cached is not None:
            return cached
        body = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        text: str = body.decode("utf-8")
        CACHE.put(key, text)
        return text

    def read_contents(self, keys: Iterable[str]) -> dict[str, str]:
        unique = list(dict.fromkeys(keys))
        missing = [k for k in unique if CACHE.get(k) is None]
        if len(missing) > 1:
            list(_pool().map(self.read_content, missing))
        return {k: self.read_content(k) for k in unique}

    def put_content(self, key: str, text: str) -> None:
        # IfNoneMatch makes the key write-once: a content version can never be overwritten in place.
        self.s3.put_object(
            Bucket=self.bucket,
            Key=key,
            Body=text.encode("utf-8"),
            ContentType="text/markdown; charset=utf-8",
            IfNoneMatch="*",
        )
        CACHE.put(key, text)

    def _bump_op(self, change: DocumentChange) -> dict[str, Any] | None:
        bump = change.bump
        if bump is None:
            return None
        cond = ["attribute_exists(pk)"]
        values: dict[str, Any] = {":one": {"N": "1"}}
        if bump.refuse_archived:
            cond.append("archived = :f")
            values[":f"] = {"BOOL": False}
        if bump.expected_context_revision is not None:
            cond.append("context_revision = :ecr")
            values[":ecr"] = {"N": str(bump.expected_context_revision)}
        return {
            "Update": {
                "TableName": self.table,
                "Key": _key(f"CONV#{bump.conversation_id}", "CONV"),
                "UpdateExpression": "SET context_revision = context_revision + :one",
                "ConditionExpression": " AND ".join(cond),
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _meta_op(self, anchor: Anchor, delta: int) -> dict[str, Any]:
        op: dict[str, Any] = {
            "TableName": self.table,
            "Key": _key(f"ANCHOR#{anchor.key}", "#META"),
            "UpdateExpression": "ADD doc_count :d",
            "ExpressionAttributeValues": {":d": {"N": str(delta)}},
        }
        if delta > 0:
            op["ConditionExpression"] = "attribute_not_exists(doc_count) OR doc_count <= :cap"
            op["ExpressionAttributeValues"][":cap"] = {"N": str(MAX_DOCUMENTS_PER_ANCHOR - delta)}
        return {"Update": op}

    def _doc_op(self, change: DocumentChange) -> dict[str, Any]:
        key = _key(f"ANCHOR#{change.anchor.key}", f"DOC#{change.rest}")
        values: dict[str, Any] = {}
        if change.expected is None:
            cond = "attribute_not_exists(pk)"
        else:
            cond = "public_id = :epid AND lock_version = :elv"
            values = {":epid": {"S": change.expected[0]}, ":elv": {"N": str(change.expected[1])}}
        op: dict[str, Any] = {
            "TableName": self.table,
            "ConditionExpression": cond,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if values:
            op["ExpressionAttributeValues"] = values
        if change.new is None:
            return {"Delete": {**op, "Key": key}}
        return {"Put": {**op, "Item": marshal(_doc_item(change.new))}}

    def commit(self, change: DocumentChange) -> None:
        # The document row carries the writer's condition; when the document count moves (create,
        # delete) or the conversation's revision must move with it, the items go in one transaction
        # so that either all of them commit or none does.
        # The caller's write budget is one more item of the same commit, so metering costs no request.
        ops: list[dict[str, Any]] = [self._doc_op(change)]
        if change.expected is None and change.new is not None:
            ops.append(self._meta_op(change.anchor, +1))
        elif change.new is None:
            ops.append(self._meta_op(change.anchor, -1))
        bump_op = self._bump_op(change)
        bump_index = -1
        if bump_op is not None:
            bump_index = len(ops)
            ops.append(bump_op)
        budget_index = -1
        if change.budget is not None:
            budget_index = len(ops)
            ops.append(self._budget_op(change.budget))
        if len(ops) == 1:
            self._single(ops[0])
            return
        try:
            self.ddb.transact_write_items(TransactItems=ops)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            raise self._explain(change, _reason_codes(exc), bump_index, budget_index) from exc

    def _budget_op(self, budget: WriteBudget) -> dict[str, Any]:
        minute = int(time.time() // 60)
        return {
            "Update": {
                "TableName": self.table,
                "Key": _key(f"RATE#{budget.principal_id}", f"MIN#{minute}"),
                "UpdateExpression": "SET expires_at = :exp ADD n :one",
                "ConditionExpression": "attribute_not_exists(n) OR n < :limit",
                "ExpressionAttributeValues": {
                    ":one": {"N": "1"},
                    ":limit": {"N": str(budget.per_minute)},
                    ":exp": {"N": str((minute + 2) * 60)},
                },
            }
        }

    def _single(self, op: dict[str, Any]) -> None:
        ((verb, body),) = op.items()
        call = {"Put": self.ddb.put_item, "Delete": self.ddb.delete_item}[verb]
        try:
            call(**body)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise stale() from exc
            raise

    def _explain(
        self, change: DocumentChange, reasons: list[dict[str, Any]], bump_index: int = -1, budget_index: int = -1
    ) -> ApiError:
        """Name the refusal from the transaction's cancellation reasons, without another read."""
        failed = {i for i, r in enumerate(reasons) if r.get("Code") not in (None, "None")}
        conflict = any(r.get("Code") == "TransactionConflict" for r in reasons)
        if budget_index in failed and reasons[budget_index].get("Code") == "ConditionalCheckFailed":
            wait = 60 - int(time.time()) % 60
            return ApiError(
                "rate_limited",
                f"You have used this minute's budget of {change.budget.per_minute if change.budget else 0} "
                f"memory writes; nothing was changed. Try again in {wait} seconds.",
                retry_after_seconds=wait,
            )
        if bump_index in failed:
            old = reasons[bump_index].get("Item")
            if not old:
                return ApiError("not_found", "That conversation does not exist.")
            conv = unmarshal(old)
            if change.bump is not None and change.bump.refuse_archived and conv.get("archived"):
                return ApiError("conversation_archived", "The conversation is archived: its memory is read-only.")
            return ApiError(
                "stale_object",
                f"The conversation's context_revision is {conv.get('context_revision')}, not the "
                "expected_context_revision you sent: read the conversation again.",
            )
        if 0 in failed:
            return stale()
        if 1 in failed and change.expected is None:
            return ApiError(
                "memory_full",
                f"This scope already holds {MAX_DOCUMENTS_PER_ANCHOR} documents: delete or merge one first.",
            )
        if conflict:
            # Real DynamoDB can cancel on a concurrent transaction touching the same item: the writer's
            # view may be outdated, so it must re-read rather than be retried blindly.
            return stale("Another write to this document was in flight: read it again, then retry.")
        return stale()

    # ---- forks ----------------------------------------------------------------------------------

    def fork_conversation(self, child: Conversation, documents: list[Document]) -> None:
        ops: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self.table,
                    "Item": marshal(_conv_item(child)),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
        ]
        if documents:
            anchor = Anchor("conversation", child.public_id)
            ops.append(
                {
                    "Put": {
                        "TableName": self.table,
                        "Item": marshal({"pk": f"ANCHOR#{anchor.key}", "sk": "#META", "doc_count": len(documents)}),
                    }
                }
            )
            ops += [{"Put": {"TableName": self.table, "Item": doc_attributes(d, anchor)}} for d in documents]
            entry = fork_log_item(child.public_id, [d.content_key for d in documents])
            ops.append(
                {
                    "Put": {
                        "TableName": self.table,
                        "Item": {
                            "pk": {"S": entry["pk"]},
                            "sk": {"S": entry["sk"]},
                            "content_keys": {"L": [{"S": k} for k in entry["content_keys"]]},
                            "expires_at": {"N": str(entry["expires_at"])},
                        },
                    }
                }
            )
        self.ddb.transact_write_items(TransactItems=ops)


# ---- the fork log ---------------------------------------------------------------------------------
# A fork makes new pointers to content that may be old, so the sweeper's grace period (an object's age)
# does not protect it: a fork that read its parent's rows, then commits while a sweep scans the table,
# can land its copies in a part the scan has already passed while the parent's own rows are deleted
# before the scan reaches them. Each fork therefore also records the content keys it copied, in the same
# transaction, under an hourly partition that the sweeper reads after its scan (store/sweeper.py).

FORK_LOG_PREFIX = "FORKLOG#"
FORK_LOG_TTL_SECONDS = 3 * 24 * 3600


def fork_log_partition(epoch: float) -> str:
    return FORK_LOG_PREFIX + time.strftime("%Y-%m-%dT%H", time.gmtime(epoch))


def fork_log_time(epoch: float) -> str:
    """Sortable UTC time with milliseconds, the log's sort key prefix."""
    ms = int(epoch * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def fork_log_item(child_id: str, content_keys: list[str], epoch: float | None = None) -> dict[str, Any]:
    at = time.time() if epoch is None else epoch
    return {
        "pk": fork_log_partition(at),
        "sk": f"{fork_log_time(at)}#{child_id}",
        "content_keys": sorted(set(content_keys)),
        # DynamoDB's TTL removes the entry long after any sweep could need it.
        "expires_at": int(at) + FORK_LOG_TTL_SECONDS,
    }
