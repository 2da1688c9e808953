"""Rows <-> DynamoDB items: one marshalling path, and one mapper each way per row kind.

Every `*_item` returns the item as DynamoDB's wire format spells it (`{"pk": {"S": ...}, ...}`) and every
`*_row` reads one back, so no caller marshals by hand. Attributes that are None are left out of an item,
and an absent attribute reads back as None (or the row's default).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from agent_memory.core import clock
from agent_memory.core.idempotency import Answer, Record
from agent_memory.core.model import (
    DEFAULT_EXECUTION_TTL_SECONDS,
    Account,
    Agent,
    Ancestor,
    Anchor,
    Attachment,
    Author,
    Conversation,
    Document,
    EntryPage,
    Execution,
    ExecutionStop,
    ForkBase,
    FrozenBinding,
    GitOrigin,
    Human,
    Lease,
    Member,
    MemoryAccess,
    MemoryDefault,
    MemoryReference,
    MemoryStats,
    MergedFrom,
    Mount,
    OrgMemory,
    PromotedFrom,
    Quarantine,
    RecordClaim,
    RunLine,
    Speaker,
    StoreEntry,
    TokenRow,
    TypedRecord,
    Version,
    Workspace,
)
from agent_memory.core.ports import Ref
from agent_memory.store import keys

Item = dict[str, Any]

_ser = TypeSerializer()
_deser = TypeDeserializer()
# DynamoDB numbers carry 38 significant digits; past that TypeSerializer refuses, and so must the fast path.
_INT_BOUND = 10**38


def plain(value: Any) -> Any:
    """A deserialized value with Decimals made int (when whole) or float, as the rows hold them."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def attribute(value: Any) -> dict[str, Any]:
    """One value in DynamoDB's wire format, exactly as TypeSerializer spells it (None is NULL)."""
    return marshal({"": value})[""] if value is not None else {"NULL": True}


def marshal(item: dict[str, Any]) -> Item:
    """A plain dict as a DynamoDB item, spelled exactly as TypeSerializer spells it; None values are left out."""
    # Strings, whole numbers and booleans are nearly every attribute we write: spelling them here skips
    # TypeSerializer's dispatch and Decimal context (~0.7 us an attribute), which a fork's 64 rows would
    # pay ten times each. `type() is`, not isinstance: bool is an int, and subclasses take the general path.
    # The dispatch is inlined because a call per attribute is a quarter of the loop's time.
    out: Item = {}
    for k, v in item.items():
        kind = type(v)
        if kind is str:
            out[k] = {"S": v}
        elif v is None:
            continue
        elif kind is int and -_INT_BOUND < v < _INT_BOUND:
            out[k] = {"N": str(v)}
        elif kind is bool:
            out[k] = {"BOOL": v}
        else:
            out[k] = _ser.serialize(v)
    return out


def unmarshal(item: Item) -> dict[str, Any]:
    """A DynamoDB item as a plain dict, read exactly as TypeDeserializer reads it with numbers made plain."""
    # The same fast path, reading: TypeDeserializer's dispatch and Decimal cost ~3 us an attribute, half of
    # a listing's own time (tests/bench.py). Only whole numbers in plain digits skip Decimal.
    out: dict[str, Any] = {}
    for k, a in item.items():
        if "S" in a:
            out[k] = a["S"]
        elif "N" in a and (n := a["N"]).isascii() and (n.isdigit() or (n[:1] == "-" and n[1:].isdigit())):
            out[k] = int(n)
        elif "BOOL" in a:
            out[k] = a["BOOL"]
        else:
            out[k] = plain(_deser.deserialize(a))
    return out


# ---- one mapper each way per row kind --------------------------------------------------------------


def token_item(t: TokenRow) -> Item:
    pk, sk = keys.token(t.digest)
    return marshal(
        {
            "pk": pk,
            "sk": sk,
            "principal_kind": t.principal_kind,
            "principal_id": t.principal_id,
            "account_id": t.account_id,
            "principal_name": t.principal_name,
        }
    )


def token_row(item: Item) -> TokenRow:
    it = unmarshal(item)
    return TokenRow(
        it["pk"][len(keys.TOKEN) :],
        it["principal_kind"],
        it["principal_id"],
        it["account_id"],
        it.get("principal_name"),
    )


def account_item(a: Account) -> Item:
    pk, sk = keys.account(a.public_id)
    return marshal({"pk": pk, "sk": sk, "name": a.name, "created_at": a.created_at, "first_human_id": a.first_human_id})


def account_row(item: Item) -> Account:
    it = unmarshal(item)
    return Account(it["pk"][len(keys.ACCOUNT) :], it["name"], it["created_at"], it.get("first_human_id"))


def human_item(h: Human) -> Item:
    pk, sk = keys.human(h.public_id)
    return marshal(
        {
            "pk": pk,
            "sk": sk,
            "account_id": h.account_id,
            "name": h.name,
            "created_at": h.created_at,
            "token_digest": h.token_digest,
        }
    )


def human_row(item: Item) -> Human:
    it = unmarshal(item)
    return Human(it["pk"][len(keys.HUMAN) :], it["account_id"], it["name"], it["created_at"], it.get("token_digest"))


def agent_item(a: Agent) -> Item:
    pk, sk = keys.agent(a.public_id)
    return marshal(
        {
            "pk": pk,
            "sk": sk,
            "account_id": a.account_id,
            "steward_id": a.steward_id,
            "name": a.name,
            "kind": a.kind,
            "memory_context_limit": a.memory_context_limit,
            # Absent and "no limit" must read back apart from a stored limit, whatever the limit holds.
            "has_limit": a.memory_context_limit is not None,
            "created_at": a.created_at,
            "token_digest": a.token_digest,
            "deployment": a.deployment,
            "memories": attachments_attribute(a.memories) if a.memories else None,
            "memories_revision": a.memories_revision or None,
        }
    )


def agent_index_item(a: Agent) -> Item:
    pk, sk = keys.agent_index(a.account_id, a.public_id)
    return marshal({"pk": pk, "sk": sk, "name": a.name, "deployment": a.deployment})


def agent_index_row(item: Item) -> tuple[str, str, str | None]:
    it = unmarshal(item)
    return it["sk"][len(keys.AGENT_INDEX) :], it["name"], it.get("deployment")


def attachments_attribute(attached: tuple[Attachment, ...]) -> dict[str, Any]:
    """An agent's attachments as a map by Memory id (so a Memory's deletion removes its entry by name),
    each with its position in the list the steward gave."""
    return {a.memory_id: {"mode": a.mode, "read_first": a.read_first, "position": i} for i, a in enumerate(attached)}


def _attachments(raw: Any) -> tuple[Attachment, ...]:
    if not isinstance(raw, dict):
        return ()
    ordered = sorted(raw.items(), key=lambda kv: int(kv[1].get("position", 0)))
    return tuple(Attachment(mid, v["mode"], bool(v["read_first"])) for mid, v in ordered)


def agent_row(item: Item) -> Agent:
    it = unmarshal(item)
    return Agent(
        public_id=it["pk"][len(keys.AGENT) :],
        account_id=it["account_id"],
        steward_id=it["steward_id"],
        name=it["name"],
        kind=it["kind"],
        memory_context_limit=it.get("memory_context_limit") if it.get("has_limit") else None,
        created_at=it["created_at"],
        token_digest=it.get("token_digest"),
        deployment=it.get("deployment"),
        memories=_attachments(it.get("memories")),
        memories_revision=int(it.get("memories_revision") or 0),
    )


def definition_item(a: Agent) -> Item:
    pk, sk = keys.definition(a.steward_id, a.name)
    return marshal({"pk": pk, "sk": sk, "agent_id": a.public_id})


def definition_row(item: Item) -> str:
    """The agent id a definition-name claim points at."""
    agent_id: str = unmarshal(item)["agent_id"]
    return agent_id


def speaker_item(s: Speaker) -> Item:
    pk, sk = keys.speaker(s.public_id)
    return marshal(
        {
            "pk": pk,
            "sk": sk,
            "account_id": s.account_id,
            "agent_id": s.agent_id,
            "name": s.name,
            "created_at": s.created_at,
        }
    )


def speaker_row(item: Item) -> Speaker:
    it = unmarshal(item)
    return Speaker(it["pk"][len(keys.SPEAKER) :], it["account_id"], it["agent_id"], it["name"], it["created_at"])


def workspace_item(w: Workspace) -> Item:
    pk, sk = keys.workspace(w.public_id)
    return marshal(
        {
            "pk": pk,
            "sk": sk,
            "account_id": w.account_id,
            "name": w.name,
            "created_at": w.created_at,
            "tool_provider_overrides": w.tool_provider_overrides,
            "dedup_enabled": None if w.dedup_enabled else False,
            "created_by": w.created_by,
        }
    )


def workspace_row(item: Item) -> Workspace:
    it = unmarshal(item)
    return Workspace(
        public_id=it["pk"][len(keys.WORKSPACE) :],
        account_id=it["account_id"],
        name=it["name"],
        created_at=it["created_at"],
        tool_provider_overrides=it.get("tool_provider_overrides") or {},
        dedup_enabled=it.get("dedup_enabled") is not False,
        created_by=it.get("created_by"),
    )


def member_item(m: Member) -> Item:
    pk, sk = keys.member(m.workspace_id, m.principal_id)
    return marshal(
        {
            "pk": pk,
            "sk": sk,
            "principal_kind": m.principal_kind,
            "principal_id": m.principal_id,
            "role": m.role,
            "created_at": m.created_at,
        }
    )


def member_row(item: Item) -> Member:
    it = unmarshal(item)
    return Member(
        it["pk"][len(keys.WORKSPACE) :], it["principal_kind"], it["principal_id"], it["role"], it["created_at"]
    )


def conversation_item(c: Conversation) -> Item:
    pk, sk = keys.conversation(c.public_id)
    return marshal(
        {
            "pk": pk,
            "sk": sk,
            "workspace_id": c.workspace_id,
            "account_id": c.account_id,
            "created_by": c.created_by,
            "created_at": c.created_at,
            "context_revision": c.context_revision,
            "archived": c.archived,
            "memory_context": c.memory_context,
            # memory_context may be set to null explicitly; the flag tells that from "never set".
            "has_memory_context": c.memory_context is not None,
            "answering_agent_id": c.answering_agent_id,
            "parent_public_id": c.parent_public_id,
            "forked_at": c.forked_at,
        }
    )


def room_entry_item(c: Conversation) -> Item:
    """The workspace's note that it holds conversation `c` (created or forked there)."""
    pk, sk = keys.room_conversation(c.workspace_id, c.public_id)
    return marshal({"pk": pk, "sk": sk, "created_at": c.created_at})


def conversation_row(item: Item) -> Conversation:
    it = unmarshal(item)
    return Conversation(
        public_id=it["pk"][len(keys.CONVERSATION) :],
        workspace_id=it["workspace_id"],
        account_id=it["account_id"],
        created_by=it["created_by"],
        created_at=it["created_at"],
        context_revision=it["context_revision"],
        archived=it["archived"],
        memory_context=it.get("memory_context") if it.get("has_memory_context") else None,
        answering_agent_id=it.get("answering_agent_id"),
        parent_public_id=it.get("parent_public_id"),
        forked_at=it.get("forked_at"),
    )


def live_conversation_row(item: Item) -> Conversation | None:
    """A conversation as every reader sees it: a deleted one (its tombstone) reads as absent, so each of its
    routes is not_found, an alias of it is an unavailable source, and binding it is refused."""
    if "deleted_at" in item:
        return None
    return conversation_row(item)


def frozen_item(b: FrozenBinding) -> dict[str, Any]:
    """An execution's stored root. These keys are the stored schema: rows written before stay readable."""
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


def execution_item(e: Execution) -> Item:
    pk, sk = keys.execution(e.public_id)
    return marshal(
        {
            "pk": pk,
            "sk": sk,
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
            "mail_from_id": e.mail_from_id,
            "expires_at": e.expires_at,
            "secret_digest": e.secret_digest,
            "principal_name": e.principal_name,
            "mounts": [mount_item(m) for m in e.mounts] or None,
            "ancestors": [{"execution_id": a.execution_id, "conversation_id": a.conversation_id} for a in e.ancestors]
            or None,
        }
    )


def mount_item(m: Mount) -> dict[str, Any]:
    return {
        k: v
        for k, v in {
            "path": m.path,
            "kind": m.kind,
            "mode": m.mode,
            "source": m.source,
            "memory_id": m.memory_id,
            "name": m.name,
            "read_first": m.read_first,
            "description": m.description,
        }.items()
        if v is not None
    }


def mount_row(it: dict[str, Any]) -> Mount:
    return Mount(
        it["path"],
        it["kind"],
        it["mode"],
        it.get("source") or "native",
        it.get("memory_id"),
        it.get("name"),
        it.get("read_first"),
        it.get("description"),
    )


def memory_mount_items(e: Execution) -> list[Item]:
    """The account's index entries of the Memories an execution mounts: one per Memory (however many
    mounts name it), living as long as the execution (the table's TTL removes them after)."""
    mounted = dict.fromkeys(m.memory_id for m in e.mounts if m.memory_id is not None)
    out: list[Item] = []
    for memory_id in mounted:
        pk, sk = keys.memory_mount(e.account_id, memory_id, e.public_id)
        out.append(marshal({"pk": pk, "sk": sk, "expires_at": e.expires_at}))
    return out


def memory_mount_row(item: Item) -> tuple[str, int]:
    """(memory id, expires_at) of a session-mount index entry."""
    it = unmarshal(item)
    memory_id, _, _ = it["sk"][len(keys.MEMORY_MOUNT) :].partition("#")
    return memory_id, int(it["expires_at"])


def execution_row(item: Item) -> Execution:
    it = unmarshal(item)
    return Execution(
        public_id=it["pk"][len(keys.EXECUTION) :],
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
        mail_from_id=it.get("mail_from_id"),
        # A row from before executions expired lives a default lifetime from its creation.
        expires_at=it.get("expires_at") or _epoch(it["created_at"]) + DEFAULT_EXECUTION_TTL_SECONDS,
        secret_digest=it.get("secret_digest"),
        principal_name=it.get("principal_name"),
        mounts=[mount_row(m) for m in it.get("mounts") or []],
        ancestors=_ancestors(it),
    )


def _ancestors(it: dict[str, Any]) -> list[Ancestor]:
    stored = it.get("ancestors")
    if stored:
        return [Ancestor(a["execution_id"], a["conversation_id"]) for a in stored]
    # A child stored before ancestors were kept names its parent only (its conversation is not known here:
    # the parent's own stop still reaches it).
    parent = it.get("parent_id")
    return [Ancestor(parent, "")] if parent else []


def execution_stop_row(item: Item) -> ExecutionStop:
    it = unmarshal(item)
    return ExecutionStop(it["pk"][len(keys.EXECUTION) :], float(it.get("stopped_at") or 0), it.get("stopped_by") or "")


def _epoch(iso: str) -> int:
    return int(clock.epoch_of(iso))


def doc_item(d: Document, anchor: Anchor | None = None) -> Item:
    """A pointer row, under `anchor` instead of its own when given (a fork's copy)."""
    pk, sk = keys.document(anchor or d.anchor, d.rest)
    return marshal(
        {
            "pk": pk,
            "sk": sk,
            "public_id": d.public_id,
            "lock_version": d.lock_version,
            "bytesize": d.bytesize,
            "sha256": d.sha256,
            "description": d.description,
            "written_at": d.written_at,
            "content_key": d.content_key,
            **_author_attributes(d.author),
            **_safety_attributes(d.pii, d.quarantine),
        }
    )


def _safety_attributes(pii: tuple[str, ...], q: Quarantine | None) -> dict[str, Any]:
    """The scans' findings as flat strings (a clean version stores none of them)."""
    out: dict[str, Any] = {"pii": ",".join(pii) or None}
    if q is not None:
        out |= {"quarantine": q.status, "quarantine_rules": ",".join(q.rules), "ruleset": q.ruleset}
        if q.reviewed_by is not None:
            out |= _author_attributes(q.reviewed_by, "reviewed_by")
            out["reviewed_at"] = q.reviewed_at
    return out


def _pii(it: dict[str, Any]) -> tuple[str, ...]:
    raw = it.get("pii")
    return tuple(raw.split(",")) if raw else ()


def _quarantine(it: dict[str, Any]) -> Quarantine | None:
    status = it.get("quarantine")
    if not status:
        return None
    rules = tuple(r for r in str(it.get("quarantine_rules") or "").split(",") if r)
    reviewer = _author(it, "reviewed_by") if it.get("reviewed_by") else None
    return Quarantine(status, rules, str(it.get("ruleset") or ""), reviewer, it.get("reviewed_at"))


def _author_attributes(a: Author, prefix: str = "author") -> dict[str, Any]:
    """An author as flat strings (`author` keeps the "<kind>:<id>" every row has always held), so reading
    a listing of them stays on unmarshal's fast path."""
    return {
        prefix: f"{a.kind}:{a.public_id}",
        f"{prefix}_name": a.name,
        f"{prefix}_execution": a.execution_public_id,
        f"{prefix}_commit": a.commit,
    }


def _author(it: dict[str, Any], prefix: str = "author") -> Author:
    kind, _, public_id = str(it.get(prefix) or "").partition(":")
    return Author(
        kind if kind in ("agent", "sync") else "human",  # type: ignore[arg-type]
        public_id,
        it.get(f"{prefix}_name"),
        it.get(f"{prefix}_execution"),
        it.get(f"{prefix}_commit"),
    )


# The author mappers under the names other store modules use.
author_attributes = _author_attributes
author_of = _author


def doc_row(item: Item, anchor: Anchor | None = None) -> Document:
    """A pointer row read back; a listing passes the anchor it queried, sparing the parse of the key."""
    it = unmarshal(item)
    # Positional: keyword construction costs twice as much, and a listing reads 64 of these.
    return Document(
        anchor or Anchor.from_key(it["pk"][len(keys.ANCHOR) :]),
        it["sk"][len(keys.DOC) :],
        it["public_id"],
        it["lock_version"],
        it["bytesize"],
        it["sha256"],
        it.get("description"),
        it["written_at"],
        it["content_key"],
        _author(it),
        _pii(it),
        _quarantine(it),
    )


def version_item(v: Version) -> Item:
    pk, sk = keys.version(v.anchor, v.rest, v.lock_version)
    out = {
        "pk": pk,
        "sk": sk,
        "public_id": v.public_id,
        "lock_version": v.lock_version,
        "bytesize": v.bytesize,
        "sha256": v.sha256,
        "description": v.description,
        "written_at": v.written_at,
        "content_key": v.content_key,
        **_author_attributes(v.author),
        "operation": v.operation,
        "recorded_at": int(v.recorded_at),
        "overwrote": v.overwrote_concurrent_edit or None,
        "rolled_back_from": v.rolled_back_from,
        "renamed_from": v.renamed_from,
        "forked_from": v.forked_from,
        "redacted_at": v.redacted_at,
        "handed_off": v.handed_off or None,
        **_safety_attributes(v.pii, v.quarantine),
    }
    if v.promoted_from is not None:
        out["promoted_from"] = promoted_attribute(v.promoted_from)
    if v.redacted_by is not None:
        out.update(_author_attributes(v.redacted_by, "redacted_by"))
    if v.merged_from is not None:
        m = v.merged_from
        out["merged_from"] = {
            "conversation_public_id": m.conversation_public_id,
            "public_id": m.public_id,
            "lock_version": m.lock_version,
        }
    return marshal(out)


def version_row(item: Item, anchor: Anchor, rest: str) -> Version:
    """A version record read back; the path is the caller's (the key holds only its hash)."""
    it = unmarshal(item)
    promoted = it.get("promoted_from")
    return Version(
        anchor,
        rest,
        it["public_id"],
        it["lock_version"],
        it["bytesize"],
        it["sha256"],
        it.get("description"),
        it["written_at"],
        it.get("content_key"),
        _author(it),
        it["operation"],
        float(it.get("recorded_at") or 0),
        overwrote_concurrent_edit=bool(it.get("overwrote")),
        rolled_back_from=it.get("rolled_back_from"),
        renamed_from=it.get("renamed_from"),
        promoted_from=_promoted(promoted),
        forked_from=it.get("forked_from"),
        redacted_at=it.get("redacted_at"),
        redacted_by=_author(it, "redacted_by") if it.get("redacted_by") else None,
        pii=_pii(it),
        quarantine=_quarantine(it),
        handed_off=bool(it.get("handed_off")),
        merged_from=_merged(it.get("merged_from")),
    )


def _merged(raw: Any) -> MergedFrom | None:
    if not isinstance(raw, dict):
        return None
    return MergedFrom(str(raw["conversation_public_id"]), str(raw["public_id"]), int(raw["lock_version"]))


def promoted_attribute(p: PromotedFrom) -> dict[str, Any]:
    out: dict[str, Any] = {
        "anchor_public_id": p.anchor_public_id,
        "path": p.path,
        "public_id": p.public_id,
        "lock_version": p.lock_version,
    }
    if p.memory_id is not None:
        out["memory_id"] = p.memory_id
    if p.promoted_by is not None:
        out |= {k: v for k, v in _author_attributes(p.promoted_by, "promoted_by").items() if v is not None}
        out["promoted_at"] = p.promoted_at
    return out


def _promoted(raw: Any) -> PromotedFrom | None:
    if not isinstance(raw, dict):
        return None
    return PromotedFrom(
        raw["anchor_public_id"],
        raw["path"],
        raw["public_id"],
        int(raw["lock_version"]),
        raw.get("memory_id"),
        _author(raw, "promoted_by") if raw.get("promoted_by") else None,
        raw.get("promoted_at"),
    )


def meta_item(anchor: Anchor, doc_count: int) -> Item:
    pk, sk = keys.meta(anchor)
    return marshal({"pk": pk, "sk": sk, "doc_count": doc_count})


def idempotency_item(r: Record, attempt: str) -> Item:
    """A keyed request's record. The answer is kept as JSON text: it is read back whole, never queried.
    `attempt` is new to each send, so a refusal showing this very item is this request's landed resend."""
    pk, sk = keys.idempotency(r.scope, r.key_digest)
    return marshal(
        {
            "pk": pk,
            "sk": sk,
            "fingerprint": r.fingerprint,
            "status": r.answer.status,
            "answer": json.dumps(r.answer.body, ensure_ascii=False, separators=(",", ":")),
            "expires_at": r.expires_at,
            "attempt": attempt,
        }
    )


def idempotency_row(item: Item) -> Record:
    return idempotency_record(unmarshal(item))


def idempotency_record(it: dict[str, Any]) -> Record:
    """A record from its plain attributes (as a refused condition's old item comes back)."""
    scope, _, digest = it["pk"][len(keys.IDEMPOTENCY) :].rpartition("#")
    return Record(
        scope, digest, it["fingerprint"], Answer(int(it["status"]), json.loads(it["answer"])), it["expires_at"]
    )


# ---- organization Memories ---------------------------------------------------------------------------


def memory_item(m: OrgMemory) -> Item:
    pk, sk = keys.memory(m.memory_id)
    out: dict[str, Any] = {
        "pk": pk,
        "sk": sk,
        "account_id": m.account_id,
        "name": m.name,
        "description": m.description,
        "source": m.source,
        **_author_attributes(m.created_by, "created_by"),
        "created_at": m.created_at,
        "archived": m.archived,
        "attachment_count": m.attachment_count,
        "revision": m.revision,
        **memory_settings(m),
    }
    if m.git is not None:
        out |= {"git_url": m.git.url, "git_ref": m.git.ref, "git_path": m.git.path, "git_commit": m.git.commit}
    if m.promoted_from is not None:
        out["promoted_from"] = promoted_attribute(m.promoted_from)
    return marshal(out)


def memory_settings(m: OrgMemory) -> dict[str, Any]:
    """The attributes a PATCH may change (description aside), each present as null when unset so an
    update can SET them all."""
    d, a = m.default, m.access
    return {
        "default": None
        if d is None
        else {"reach": d.reach, "deployment": d.deployment, "mode": d.mode, "read_first": d.read_first},
        "access": None if a is None else {"humans": list(a.humans), "workspaces": list(a.workspaces)},
    }


def _default(raw: Any) -> MemoryDefault | None:
    if not isinstance(raw, dict):
        return None
    return MemoryDefault(raw["reach"], raw.get("deployment"), raw["mode"], bool(raw["read_first"]))


def _access(raw: Any) -> MemoryAccess | None:
    if not isinstance(raw, dict):
        return None
    return MemoryAccess(tuple(raw.get("humans") or ()), tuple(raw.get("workspaces") or ()))


def memory_row(item: Item) -> OrgMemory | None:
    """A Memory, or None while its deletion is under way (it is gone for every reader from the start)."""
    row = memory_row_any(item)
    return None if row.deleting else row


def memory_row_any(item: Item) -> OrgMemory:
    """A Memory as stored, a deletion under way included (what that deletion reads to go on)."""
    it = unmarshal(item)
    git = None
    if it.get("git_url"):
        git = GitOrigin(it["git_url"], it.get("git_ref") or "", it.get("git_path") or "", it.get("git_commit"))
    return OrgMemory(
        memory_id=it["pk"][len(keys.MEMORY) :],
        account_id=it["account_id"],
        name=it["name"],
        description=it.get("description") or "",
        source="git" if it.get("source") == "git" else "native",
        created_by=_author(it, "created_by"),
        created_at=it["created_at"],
        archived=bool(it.get("archived")),
        git=git,
        default=_default(it.get("default")),
        access=_access(it.get("access")),
        promoted_from=_promoted(it.get("promoted_from")),
        attachment_count=int(it.get("attachment_count") or 0),
        revision=int(it.get("revision") or 0),
        deleting=bool(it.get("deleting")),
    )


def memory_index_item(m: OrgMemory) -> Item:
    pk, sk = keys.memory_index(m.account_id, m.memory_id)
    return marshal({"pk": pk, "sk": sk, "name": m.name})


def memory_name_item(m: OrgMemory) -> Item:
    pk, sk = keys.memory_name(m.account_id, m.name)
    return marshal({"pk": pk, "sk": sk, "memory_id": m.memory_id})


def memory_default_item(m: OrgMemory) -> Item:
    pk, sk = keys.memory_default(m.account_id, m.memory_id)
    return marshal({"pk": pk, "sk": sk, "name": m.name, **memory_settings(m)})


def memory_default_row(item: Item) -> tuple[str, str, MemoryDefault]:
    """(memory id, name, default) of a default's index entry."""
    it = unmarshal(item)
    d = _default(it.get("default"))
    if d is None:
        raise ValueError("a default index entry without its default")
    return it["sk"][len(keys.MEMORY_DEFAULT) :], it["name"], d


def memory_ref_item(account_id: str, r: MemoryReference) -> Item:
    pk, sk = keys.memory_ref(account_id, r.memory_id, r.agent_id)
    return marshal({"pk": pk, "sk": sk, "agent_name": r.agent_name, "mode": r.mode, "read_first": r.read_first})


def memory_ref_row(item: Item) -> MemoryReference:
    it = unmarshal(item)
    memory_id, _, agent_id = it["sk"][len(keys.MEMORY_REF) :].partition("#")
    return MemoryReference(memory_id, agent_id, it.get("agent_name") or "", it["mode"], bool(it["read_first"]))


def memory_stats_row(item: Item) -> MemoryStats | None:
    it = unmarshal(item)
    if it.get("deleted_at") is not None:
        return None
    return MemoryStats(
        int(it.get("doc_count") or 0),
        int(it.get("bytes") or 0),
        _author(it, "written_by") if it.get("written_by") else None,
        it.get("written_at"),
    )


def lease_item(anchor: Anchor, lease: Lease) -> Item:
    pk, sk = keys.lease(anchor, lease.path)
    return marshal(
        {
            "pk": pk,
            "sk": sk,
            "path": lease.path,
            **_author_attributes(lease.holder, "holder"),
            "holder_key": f"{lease.holder.kind}:{lease.holder.public_id}",
            # Read by the commit's condition (epoch seconds, fractions kept) and by the table's TTL.
            "lease_until": Decimal(str(round(lease.expires_at, 3))),
            "expires_at": int(lease.expires_at) + 1,
        }
    )


def lease_row(item: Item, memory_id: str = "") -> Lease:
    it = unmarshal(item)
    return Lease(memory_id, it.get("path") or "", _author(it, "holder"), float(it.get("lease_until") or 0))


# ---- typed records ---------------------------------------------------------------------------------


def record_item(r: TypedRecord) -> Item:
    pk, sk = keys.record(r.workspace_id, r.layer, r.public_id)
    return marshal(
        {
            "pk": pk,
            "sk": sk,
            "workspace_id": r.workspace_id,
            "layer": r.layer,
            "type": r.type,
            "content": r.content,
            **_author_attributes(r.author),
            "created_at": r.created_at,
            "updated_at": r.updated_at,
            "lock_version": r.lock_version,
            "facet": r.facet,
            "labels": list(r.labels) or None,
            "run_id": r.run_id,
            "source_kind": r.source_kind,
            "source_ref": r.source_ref,
            "visibility": r.visibility,
            "user_id": r.user_id,
            "observed_at": r.observed_at,
            "valid_from": r.valid_from,
            "valid_to": r.valid_to,
            "supersedes": r.supersedes,
            "superseded_by": r.superseded_by,
            "mention_count": r.mention_count,
            "evidence_count": r.evidence_count,
            **_safety_attributes(r.pii, r.quarantine),
            "content_digest": r.content_digest,
            "dedup_group": r.group,
            "operation_id": r.operation_id,
            "last_seen_at": r.last_seen_at,
            "s": searched_attribute(r),
        }
    )


def searched_attribute(r: TypedRecord) -> str:
    """What a search filters and ranks by, packed in one attribute: botocore parses a response value by
    value, so reading ten thousand records costs a tenth as much as it would field by field. The fields
    that change without the text (superseded_by, quarantine) stay attributes of their own."""
    packed = [r.type, r.layer, r.content, r.facet, list(r.labels), r.run_id, r.visibility]
    packed += [f"{r.author.kind}:{r.author.public_id}", r.user_id, r.valid_to, r.created_at]
    return json.dumps(packed, ensure_ascii=False, separators=(",", ":"))


def record_searched_row(item: Item, workspace_id: str) -> TypedRecord:
    """A record as a search reads it: the packed fields and the two that move on their own."""
    type_, layer, content, facet, labels, run_id, visibility, author, user_id, valid_to, created_at = json.loads(
        item["s"]["S"]
    )
    kind, _, author_id = author.partition(":")
    it = unmarshal({k: v for k, v in item.items() if k != "s"})
    return TypedRecord(
        public_id=it["sk"],
        workspace_id=workspace_id,
        layer=layer,
        type=type_,
        content=content,
        author=Author(kind, author_id),
        created_at=created_at,
        updated_at=created_at,
        facet=facet,
        labels=tuple(labels),
        run_id=run_id,
        visibility=visibility,
        user_id=user_id,
        valid_to=valid_to,
        superseded_by=it.get("superseded_by"),
        quarantine=_quarantine(it),
    )


def record_row(item: Item) -> TypedRecord:
    it = unmarshal(item)
    return TypedRecord(
        public_id=it["sk"],
        workspace_id=it["workspace_id"],
        layer=it["layer"],
        type=it["type"],
        content=it["content"],
        author=_author(it),
        created_at=it["created_at"],
        updated_at=it.get("updated_at") or it["created_at"],
        lock_version=int(it.get("lock_version") or 1),
        facet=it.get("facet"),
        labels=tuple(it.get("labels") or ()),
        run_id=it.get("run_id"),
        source_kind=it.get("source_kind") or "agent",
        source_ref=it.get("source_ref"),
        visibility=it.get("visibility") or "workspace",
        user_id=it.get("user_id"),
        observed_at=it.get("observed_at"),
        valid_from=it.get("valid_from"),
        valid_to=it.get("valid_to"),
        supersedes=it.get("supersedes"),
        superseded_by=it.get("superseded_by"),
        mention_count=int(it.get("mention_count") or 1),
        evidence_count=int(it.get("evidence_count") or 1),
        pii=_pii(it),
        quarantine=_quarantine(it),
        content_digest=it.get("content_digest") or "",
        group=it.get("dedup_group") or "",
        operation_id=it.get("operation_id") or "",
        last_seen_at=it.get("last_seen_at"),
    )


def record_claim_row(item: Item) -> RecordClaim:
    it = unmarshal(item)
    return RecordClaim(
        str(it.get("record_id") or ""), float(it.get("claimed_until") or 0), int(it.get("lock_version") or 0)
    )


def record_band_row(item: Item) -> tuple[str, ...]:
    """The record ids a band value names, newest first (ids are UUIDv7, so they sort by time)."""
    ids = item.get("ids", {}).get("SS") or []
    return tuple(sorted(ids, reverse=True))


def run_line_row(item: Item) -> RunLine:
    it = unmarshal(item)
    return RunLine(
        it["sk"],
        bool(it.get("consolidated")),
        it.get("claimed_by"),
        float(it.get("claimed_until") or 0),
    )


# ---- conversation store entries and fork bases ---------------------------------------------------------

# A store entry is a top-level attribute of its page item, named by this prefix and its key.
ENTRY_ATTRIBUTE = "E:"


def entry_attribute(e: StoreEntry) -> dict[str, Any]:
    """One entry as its page holds it (wire format): the value as compact JSON text, never queried."""
    return {
        "M": {
            "v": {"S": e.value_json},
            "lv": {"N": str(e.lock_version)},
            "b": {"N": str(e.bytesize)},
            "t": {"S": e.updated_at},
        }
    }


def entry_page_row(item: Item) -> EntryPage:
    conversation_id = Anchor.from_key(item["pk"]["S"][len(keys.ANCHOR) :]).owner_id
    number = int(item["sk"]["S"][len(keys.ENTRY_PAGE) :])
    entries: dict[str, StoreEntry] = {}
    for name, raw in item.items():
        if not name.startswith(ENTRY_ATTRIBUTE):
            continue
        m = raw["M"]
        key = name[len(ENTRY_ATTRIBUTE) :]
        entries[key] = StoreEntry(key, int(m["lv"]["N"]), m["v"]["S"], int(m["b"]["N"]), m["t"]["S"])
    return EntryPage(conversation_id, number, entries)


def entry_page_item(page: EntryPage, conversation_id: str | None = None) -> Item:
    """A page item whole, under `conversation_id` instead of its own when given (a fork's copy)."""
    pk, sk = keys.entry_page(conversation_id or page.conversation_id, page.number)
    item: Item = {"pk": {"S": pk}, "sk": {"S": sk}, "n": {"N": str(len(page.entries))}}
    for key, e in page.entries.items():
        item[f"{ENTRY_ATTRIBUTE}{key}"] = entry_attribute(e)
    return item


def fork_base_item(base: ForkBase) -> Item:
    pk, sk = keys.fork_base(base.conversation_id)
    return marshal(
        {
            "pk": pk,
            "sk": sk,
            "parent_public_id": base.parent_public_id,
            "documents": {rest: {"p": pid, "v": lv} for rest, (pid, lv) in base.documents.items()},
        }
    )


def fork_base_row(item: Item) -> ForkBase:
    it = unmarshal(item)
    conversation_id = Anchor.from_key(it["pk"][len(keys.ANCHOR) :]).owner_id
    docs = {rest: (str(d["p"]), int(d["v"])) for rest, d in (it.get("documents") or {}).items()}
    return ForkBase(conversation_id, str(it.get("parent_public_id") or ""), docs)


def read_row(ref: Ref, item: Item) -> Any:
    """The row object a batch read answers for one ref."""
    if ref.kind == "version":
        _, _, rest = ref.b.partition("#")
        return version_row(item, Anchor.from_key(ref.a), rest)
    if ref.kind == "lease":
        return lease_row(item, Anchor.from_key(ref.a).owner_id)
    return ROWS[ref.kind](item)


# What `get_many` reads, by `Ref.kind` (a version, which needs its path, by `read_row`).
ROWS: dict[str, Callable[[Item], Any]] = {
    "token": token_row,
    "workspace": workspace_row,
    "member": member_row,
    "conversation": live_conversation_row,
    "agent": agent_row,
    "speaker": speaker_row,
    "human": human_row,
    "account": account_row,
    "document": doc_row,
    "execution": execution_row,
    "execution_stop": execution_stop_row,
    "idempotency": idempotency_row,
    "memory": memory_row,
    "memory_any": memory_row_any,
    "memory_stats": memory_stats_row,
    "record": record_row,
    "record_claim": record_claim_row,
    "record_band": record_band_row,
    "entry_page": entry_page_row,
    "fork_base": fork_base_row,
}
