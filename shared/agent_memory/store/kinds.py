"""Every stored item kind, declared once: its key shape, its row type and its codec.

One table holds every item; the partition key names the thing, the sort key the item within it. Each
`Kind` below is one sort of item: its key shape (pk and sk templates whose `{fields}` are the key's
parts, named after the row's fields where the row holds them), what it holds, the core/model.py row it
reads back as, and how the row is stored (`items.Fields`: the row's fields as attributes, with overrides
only where the stored spelling differs; or a hand-written pair where the item is no plain row). From the
entries follow the key builders (`keys.*`), the key a `Ref` names (`ref_key`), what a batch read answers
for it (`read_row`), and the key layout the template's header shows (`layout`).

A conversation's store entries are client state no prompt reads: at most 64 of 16 KiB each, kept as
top-level attributes `E:<key>` of ENTRY_PAGES page items (at most ENTRIES_PER_PAGE each, counted in `n`),
so a fork copies them in its one transaction and a request reads them all in its first batch.

A record's shard is a hash of its id (RECORD_SHARDS of them per layer), so a search reads a workspace's
records as that many Queries in parallel and a read by id knows its key without an index; <group> is the
digest of what duplicates are checked within (records.py).

<anchor> is `Anchor.key`: <scope>#<owner>[#<speaker>]; <minute> is whole minutes since the epoch.
<path_hash> is the SHA-256 (hex) of the document's <path>: a path may take 1020 bytes, which a sort key with a
version behind it would not hold, and the hash keeps a version's key computable from the path and the
number alone, so it rides in a request's first batch read. <lock_version> is the lock_version, zero-padded to
VERSION_DIGITS so the versions of one path sort by number.
Content lives in S3 under keys that are never reused, so a read can cache it forever by key.

A deleted conversation's items: its `CONV` row stays as the tombstone; everything else it owns lives under
`ANCHOR#conversation#<id>` (pointers, version records, and any later kind of the conversation's, such as
store entries) or in its own `CONV#<id>` partition beside the tombstone, and the sweeper removes every item
of both once the deletion's mark on the anchor's `#META` row is older than its grace (store/sweeper.py).

A record's search postings (`RECORD_TERM`) are written, changed and removed in the same commit as the
record, and hold terms of its text: nothing of a deleted record survives in them (records.py).

A new kind is its row dataclass in core/model.py and one entry here (plus a `Ref` factory in
core/ports.py when the domain batch-reads it): see docs/architecture.md.

Stored spellings are data on disk (local data dirs, deployed tables): tests/unit/test_item_formats.py
pins every kind's item, so a change here that alters one fails there.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any, Generic, TypeVar

from agent_memory.core.idempotency import Record
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import (
    Account,
    Agent,
    Anchor,
    ConsoleSession,
    Conversation,
    Document,
    EntryPage,
    Execution,
    ExecutionStop,
    ForkBase,
    Human,
    Lease,
    Member,
    MemoryDefault,
    MemoryReference,
    MemoryStats,
    OrgMemory,
    RecordClaim,
    RunLine,
    Speaker,
    TokenRow,
    TypedRecord,
    Version,
    Workspace,
    stored_mode,
)
from agent_memory.core.ports import Ref
from agent_memory.store import items
from agent_memory.store.items import Attr, Fields, Item, marshal, unmarshal

R = TypeVar("R")
Key = tuple[str, str]
# Reads a row from its item's attributes and its key's parts.
Decoder = Callable[[dict[str, Any], dict[str, str]], R]

_FIELD = re.compile(r"\{(\w+)(?::[^}]*)?\}")

VERSION_DIGITS = 12
RECORD_SHARDS = 8


def path_hash(rest: str) -> str:
    """A document path as a key part (<path_hash> above)."""
    return hashlib.sha256(rest.encode("utf-8")).hexdigest()


def record_shard(record_id: str) -> int:
    return int(hashlib.sha256(record_id.encode("ascii", "replace")).hexdigest()[:4], 16) % RECORD_SHARDS


def record_partition(layer: str, shard: int) -> str:
    return f"{layer[:1]}{shard}"


def term_hash(term: str) -> str:
    """A search term as a key part: fixed in size whatever the word, 128 bits (collisions never met)."""
    return hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def run_digest(run_id: str) -> str:
    return hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Shape:
    """One key template pair: builds a key from its parts and reads the parts back out of one."""

    __slots__ = ("_pk", "_sk", "fields", "pk", "pk_prefix", "sk", "sk_prefix")

    def __init__(self, pk: str, sk: str) -> None:
        self.pk, self.sk = pk, sk
        self.fields = tuple(dict.fromkeys(_FIELD.findall(pk) + _FIELD.findall(sk)))
        # What every key of the shape starts with (what a listing's begins_with names).
        self.pk_prefix, self.sk_prefix = pk.split("{", 1)[0], sk.split("{", 1)[0]
        # Built on the first parse: a function reads a few of the kinds, and compiling every kind's
        # regular expressions at import was a cold start's cost for nothing.
        self._pk: Callable[[str], dict[str, str] | None] | None = None
        self._sk: Callable[[str], dict[str, str] | None] | None = None

    def key(self, *args: Any, **parts: Any) -> Key:
        """The key of these parts, given in the order the templates name them or by name."""
        if args:
            parts = dict(zip(self.fields, args, strict=False)) | parts
        return self.pk.format(**parts), self.sk.format(**parts)

    def parse(self, pk: str, sk: str) -> dict[str, str] | None:
        """The parts of a key of this shape, or None when the key is of another shape."""
        if self._pk is None or self._sk is None:
            # Two threads may both build them: the same parsers, and either serves.
            self._pk, self._sk = _parser(self.pk), _parser(self.sk)
        p, s = self._pk(pk), self._sk(sk)
        if p is None or s is None:
            return None
        return p | s

    def text(self) -> str:
        """The shape as the layout spells it: `{field}` as `<field>`."""
        return f"{_FIELD.sub(_angled, self.pk)}  {_FIELD.sub(_angled, self.sk)}"


def _angled(m: re.Match[str]) -> str:
    return f"<{m.group(1)}>"


def _parser(template: str) -> Callable[[str], dict[str, str] | None]:
    """What reads one template's parts back: a prefix and one part after it (nearly every key) by slicing,
    since a listing parses a key per row; anything else by a regular expression."""
    found = list(_FIELD.finditer(template))
    if not found:
        return lambda text: {} if text == template else None
    if len(found) == 1 and found[0].end() == len(template) and ":" not in found[0].group(0):
        prefix, name, at = template[: found[0].start()], found[0].group(1), found[0].start()
        return lambda text: {name: text[at:]} if text.startswith(prefix) else None
    pattern = _pattern(template)

    def parse(text: str) -> dict[str, str] | None:
        m = pattern.fullmatch(text)
        return None if m is None else m.groupdict()

    return parse


def _pattern(template: str) -> re.Pattern[str]:
    """A template as a regular expression: each part up to the next literal, the last one to the end."""
    out, at = [], 0
    found = list(_FIELD.finditer(template))
    for i, m in enumerate(found):
        out.append(re.escape(template[at : m.start()]))
        last = i == len(found) - 1 and m.end() == len(template)
        out.append(f"(?P<{m.group(1)}>{'.*' if last else '.*?'})")
        at = m.end()
    out.append(re.escape(template[at:]))
    return re.compile("".join(out), re.DOTALL)


@dataclass(frozen=True, eq=False)
class Kind(Generic[R]):
    """One stored item kind. `name` is the `Ref.kind` a batch read names it by ("" when none does)."""

    name: str
    pk: str
    sk: str
    holds: str
    row: type[Any] | None = None
    codec: Fields[Any] | tuple[Callable[[R], dict[str, Any]] | None, Decoder[R] | None] | None = None
    # The key's parts a row stands for, when they are not the row's fields of the same names.
    parts_of: Callable[[Any], dict[str, Any]] | None = None
    # The key's parts a `Ref`'s (a, b) stand for, when they are not the shape's first two parts in order.
    ref_parts: Callable[[str, str], dict[str, Any]] | None = None
    # The encoder answers wire-format attributes (it spells them itself, for speed).
    wire: bool = False
    shape: Shape = field(init=False)
    _encode: Callable[[R], dict[str, Any]] | None = field(init=False)
    _decode: Decoder[R] | None = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", Shape(self.pk, self.sk))
        if isinstance(self.codec, Fields):
            # Compiled on first use (`_bind`): a function reads and writes a few of the fifty kinds, and
            # compiling them all was a tenth of a cold start (tests/unit/test_kinds.py binds every one).
            object.__setattr__(self, "_encode", self._bind_encode)
            object.__setattr__(self, "_decode", self._bind_decode)
            return
        encode, decode = self.codec if self.codec is not None else (None, None)
        object.__setattr__(self, "_encode", encode)
        object.__setattr__(self, "_decode", decode)

    def _bind(self) -> None:
        assert isinstance(self.codec, Fields) and self.row is not None
        encode, decode = self.codec.bind(self.row, self.shape)
        # Two threads may both compile: the same functions, and either pair serves.
        object.__setattr__(self, "_encode", encode)
        object.__setattr__(self, "_decode", decode)

    def _bind_encode(self, row: R) -> dict[str, Any]:
        self._bind()
        assert self._encode is not None
        return self._encode(row)

    def _bind_decode(self, it: dict[str, Any], parts: dict[str, str]) -> R:
        self._bind()
        assert self._decode is not None
        return self._decode(it, parts)

    def key(self, *args: Any, **parts: Any) -> Key:
        return self.shape.key(*args, **parts)

    def key_of(self, row: R, **parts: Any) -> Key:
        """The key `row` is stored under; `parts` name another home for it (a fork's copy)."""
        if self.parts_of is not None:
            return self.shape.key(**(self.parts_of(row) | parts))
        return self.shape.key(**{f: getattr(row, f) for f in self.shape.fields if f not in parts}, **parts)

    def item(self, row: R, **parts: Any) -> Item:
        """The row as DynamoDB's wire format spells its item."""
        assert self._encode is not None, f"{self.name or self.pk} items are not written whole"
        pk, sk = self.key_of(row, **parts)
        if self.wire:
            return {"pk": {"S": pk}, "sk": {"S": sk}} | self._encode(row)
        return marshal({"pk": pk, "sk": sk} | self._encode(row))

    def read(self, item: Item, **given: str) -> R:
        """The row an item (wire format) holds; `given` are the fields its key holds only hashed."""
        return self.decode(item if self.wire else unmarshal(item), **given)

    def decode(self, it: dict[str, Any], **given: str) -> R:
        """The row an item holds, given as `read` hands it to the codec (plain, unless `wire`)."""
        assert self._decode is not None, f"{self.name or self.pk} items are not read as rows"
        pk, sk = (it["pk"]["S"], it["sk"]["S"]) if self.wire else (it["pk"], it["sk"])
        parts = self.shape.parse(pk, sk)
        if parts is None:
            raise ValueError(f"not a {self.name or self.pk} key: {it['pk']!r} {it['sk']!r}")
        return self._decode(it, parts | given if given else parts)

    def ref_key(self, ref: Ref[Any]) -> Key:
        if self.ref_parts is not None:
            return self.shape.key(**self.ref_parts(ref.a, ref.b))
        return self.shape.key(ref.a, ref.b)


def _anchor_parts(anchor_key: str, rest: str) -> dict[str, Any]:
    return {"anchor": anchor_key, "rest": rest}


def _split(name_a: str, name_b: str, a: str, b: str) -> dict[str, Any]:
    first, _, second = b.partition("#")
    return {name_a: a, "group": first, name_b: second}


# ---- the registry -------------------------------------------------------------------------------------

TOKEN: Kind[TokenRow] = Kind(
    "token", "TOKEN#{digest}", "TOKEN", "the principal a bearer token stands for", TokenRow, Fields()
)
ACCOUNT: Kind[Account] = Kind("account", "ACCOUNT#{public_id}", "ACCOUNT", "name, created_at", Account, Fields())
HUMAN: Kind[Human] = Kind("human", "HUMAN#{public_id}", "HUMAN", "account, name", Human, Fields())
AGENT: Kind[Agent] = Kind(
    "agent",
    "AGENT#{public_id}",
    "AGENT",
    "steward, kind, memory_context_limit, current token digest",
    Agent,
    Fields(
        memory_context_limit=Attr(
            # Absent and "no limit" must read back apart from a stored limit, whatever the limit holds.
            write=lambda v: {"memory_context_limit": v, "has_limit": v is not None},
            read=lambda it: it.get("memory_context_limit") if it.get("has_limit") else None,
        ),
        memories=Attr(
            write=lambda v: {"memories": items.attachments_attribute(v) if v else None},
            read=lambda it: items.attachments(it.get("memories")),
        ),
        memories_revision=Attr.number_or_none("memories_revision"),
    ),
)
DEFINITION: Kind[Agent] = Kind(
    "",
    "STEWARD#{steward_id}",
    "DEFNAME#{name}",
    "claims a definition name, unique per steward",
    Agent,
    (lambda a: {"agent_id": a.public_id}, None),
)
SPEAKER: Kind[Speaker] = Kind(
    "speaker", "SPEAKER#{public_id}", "SPEAKER", "the agent a speaker belongs to, name", Speaker, Fields()
)
WORKSPACE: Kind[Workspace] = Kind(
    "workspace",
    "WS#{public_id}",
    "WS",
    "settings (tool_provider_overrides)",
    Workspace,
    Fields(
        tool_provider_overrides=Attr(read=lambda it: it.get("tool_provider_overrides") or {}),
        # Stored only when off, so a workspace from before the setting reads as on.
        dedup_enabled=Attr(
            write=lambda v: {"dedup_enabled": None if v else False},
            read=lambda it: it.get("dedup_enabled") is not False,
        ),
        # Stored only once indexed, so a workspace from before the index reads as 0 (searched by reading all).
        records_index=Attr.number_or_none("records_index"),
    ),
)
MEMBER: Kind[Member] = Kind(
    "member",
    "WS#{workspace_id}",
    "MEMBER#{principal_id}",
    "role of a human or agent in the workspace",
    Member,
    Fields(stored_too=("principal_id",)),
)
ROOM_CONVERSATION: Kind[Conversation] = Kind(
    "",
    "WS#{workspace_id}",
    "CONVREF#{public_id}",
    "a conversation of the workspace (what an export walks)",
    Conversation,
    (lambda c: {"created_at": c.created_at}, None),
)
_CONVERSATION_FIELDS: Fields[Conversation] = Fields(
    memory_context=Attr(
        # memory_context may be set to null explicitly; the flag tells that from "never set".
        write=lambda v: {"memory_context": v, "has_memory_context": v is not None},
        read=lambda it: it.get("memory_context") if it.get("has_memory_context") else None,
    ),
)
CONVERSATION_ANY: Kind[Conversation] = Kind(
    "",
    "CONV#{public_id}",
    "CONV",
    "context_revision, archived, memory_context, answering agent; deleted_at once deleted (a tombstone: it "
    "reads as absent)",
    Conversation,
    _CONVERSATION_FIELDS,
)


def _conversation(it: dict[str, Any], parts: dict[str, str]) -> Conversation:
    decode = CONVERSATION_ANY._decode  # read at each call: it is compiled on first use
    assert decode is not None
    return decode(it, parts)


# A conversation as every reader sees it: a deleted one (its tombstone) reads as absent, so each of its routes
# is not_found, an alias of it is an unavailable source, and binding it is refused.
CONVERSATION: Kind[Conversation | None] = Kind(
    "conversation",
    CONVERSATION_ANY.pk,
    CONVERSATION_ANY.sk,
    "",
    Conversation,
    (None, lambda it, parts: None if "deleted_at" in it else _conversation(it, parts)),
)
EXECUTION: Kind[Execution] = Kind(
    "execution",
    "EXEC#{public_id}",
    "EXEC",
    "an execution: principal, answerer, subject, frozen bindings, tools, ancestors (the executions it was "
    "spawned from)",
    Execution,
    items.EXECUTION_FIELDS,
)
EXECUTION_STOP: Kind[ExecutionStop] = Kind(
    "execution_stop",
    "EXEC#{execution_id}",
    "STOP",
    "the execution was stopped: when, by whom (TTL past its descendants)",
    ExecutionStop,
    Fields(stopped_at=Attr.number("stopped_at", float), stopped_by=Attr(read=lambda it: it.get("stopped_by") or "")),
)
CONSOLE_SESSION: Kind[ConsoleSession] = Kind(
    "",
    "CONSOLE#{session_digest}",
    "SESSION",
    "a console sign-in: the Human, the digest of the token it signed in with (expires_at; TTL)",
    ConsoleSession,
    Fields(
        created_at=Attr.number("created_at", int),
        expires_at=Attr.number("expires_at", int),
    ),
)
META: Kind[int] = Kind(
    "",
    "ANCHOR#{anchor}",
    "#META",
    "doc_count: the 64-document bound, moved in the same transaction",
    None,
    (lambda n: {"doc_count": n}, None),
)
DOCUMENT: Kind[Document] = Kind(
    "document",
    "ANCHOR#{anchor}",
    "DOC#{rest}",
    "a document pointer row -> immutable S3 content key",
    Document,
    items.DOCUMENT_FIELDS,
    parts_of=lambda d: {"anchor": d.anchor.key, "rest": d.rest},
    ref_parts=_anchor_parts,
)
VERSION: Kind[Version] = Kind(
    "version",
    "ANCHOR#{anchor}",
    f"VER#{{path_hash}}#{{lock_version:0{VERSION_DIGITS}d}}",
    "one version record of the document at <path> (store/versions.py)",
    Version,
    items.VERSION_FIELDS,
    parts_of=lambda v: {"anchor": v.anchor.key, "path_hash": path_hash(v.rest), "lock_version": v.lock_version},
    ref_parts=lambda a, b: _version_parts(a, *b.split("#", 1)),
)
ENTRY_PAGE: Kind[EntryPage] = Kind(
    "entry_page",
    "ANCHOR#conversation#{conversation_id}",
    "ENTRIES#{number}",
    "store entries of conversation <conversation_id>, page <number> of ENTRY_PAGES (entries.py)",
    EntryPage,
    (items.entry_page_attributes, items.entry_page_row),
    wire=True,
)
FORK_BASE: Kind[ForkBase] = Kind(
    "fork_base",
    "ANCHOR#conversation#{conversation_id}",
    "FORKBASE",
    "a fork's base: each copied document's (public_id, lock_version)",
    ForkBase,
    (items.fork_base_attributes, items.fork_base_row),
)
RATE: Kind[None] = Kind(
    "", "RATE#{meter}", "MIN#{minute}", "writes counted this minute (the write budget; expires by TTL)"
)
FORK_LOG: Kind[None] = Kind(
    "",
    "FORKLOG#{hour}",
    "{at}#{child_id}",
    "content keys a fork copied, for the sweeper (expires by TTL)",
)
IDEMPOTENCY: Kind[Record] = Kind(
    "idempotency",
    "IDEM#{scope}#{key_digest}",
    "IDEM",
    "a keyed request's fingerprint and recorded answer (expires by TTL)",
    Record,
    items.IDEMPOTENCY_FIELDS,
)
MEMORY_ANY: Kind[OrgMemory] = Kind(
    "memory_any",
    "MEM#{memory_id}",
    "MEM",
    "an organization Memory: name, description, source, default, access",
    OrgMemory,
    items.MEMORY_FIELDS,
)


def _memory(it: dict[str, Any], parts: dict[str, str]) -> OrgMemory:
    decode = MEMORY_ANY._decode  # read at each call: it is compiled on first use
    assert decode is not None
    return decode(it, parts)


def _live_memory(m: OrgMemory) -> OrgMemory | None:
    return None if m.deleting else m


# A Memory, or None while its deletion is under way (it is gone for every reader from the start).
MEMORY: Kind[OrgMemory | None] = Kind(
    "memory", MEMORY_ANY.pk, MEMORY_ANY.sk, "", OrgMemory, (None, lambda it, parts: _live_memory(_memory(it, parts)))
)
MEMORY_INDEX: Kind[OrgMemory] = Kind(
    "",
    "ACCOUNT#{account_id}",
    "MEMORY#{memory_id}",
    "the account's index of its Memories (what a listing walks)",
    OrgMemory,
    (lambda m: {"name": m.name}, None),
)
MEMORY_NAME: Kind[OrgMemory] = Kind(
    "",
    "ACCOUNT#{account_id}",
    "MEMNAME#{name}",
    "claims a Memory name, unique per account",
    OrgMemory,
    (lambda m: {"memory_id": m.memory_id}, None),
)
MEMORY_DEFAULT: Kind[OrgMemory] = Kind(
    "",
    "ACCOUNT#{account_id}",
    "MEMDEFAULT#{memory_id}",
    "a tenant default: its reach, mode and read_first",
    OrgMemory,
    (lambda m: {"name": m.name, **items.memory_settings(m)}, None),
)
MEMORY_REF: Kind[MemoryReference] = Kind(
    "",
    "ACCOUNT#{account_id}",
    "MEMREF#{memory_id}#{agent_id}",
    "an agent the Memory is attached to (mode, read_first, name)",
    MemoryReference,
    Fields(
        agent_name=Attr(read=lambda it: it.get("agent_name") or ""),
        mode=Attr(read=lambda it: stored_mode(it["mode"])),
        read_first=Attr(read=lambda it: bool(it["read_first"])),
    ),
)
AGENT_INDEX: Kind[Agent] = Kind(
    "",
    "ACCOUNT#{account_id}",
    "AGENTREF#{public_id}",
    "the account's index of its agents (name, deployment)",
    Agent,
    (lambda a: {"name": a.name, "deployment": a.deployment}, None),
)
MEMORY_MOUNT: Kind[None] = Kind(
    "",
    "ACCOUNT#{account_id}",
    "MEMMOUNT#{memory_id}#{execution_id}",
    "a Memory an execution mounts, until its expires_at (TTL)",
)
MEMORY_STATS: Kind[MemoryStats | None] = Kind(
    "memory_stats",
    "ANCHOR#memory#{memory_id}",
    "#META",
    "a Memory's file count, bytes and last writer; deleted_at once deleted",
    MemoryStats,
    (None, items.memory_stats_row),
)
LEASE: Kind[Lease] = Kind(
    "lease",
    "ANCHOR#{anchor}",
    "LEASE#{path_hash}",
    "a short lease on the file at <path> (expires_at; TTL removes it)",
    Lease,
    (items.lease_attributes, items.lease_row),
    parts_of=lambda lease: {"anchor": Anchor("memory", lease.memory_id).key, "path_hash": path_hash(lease.path)},
    ref_parts=lambda a, b: {"anchor": a, "path_hash": path_hash(b)},
)
RECORD: Kind[TypedRecord] = Kind(
    "record",
    "RECORD#{workspace_id}#{partition}",
    "{public_id}",
    "a typed record, content inline; <partition> is its layer's initial (W or S) and its shard",
    TypedRecord,
    items.RECORD_FIELDS,
    parts_of=lambda r: _record_parts(r.workspace_id, r.layer, r.public_id),
    ref_parts=lambda a, b: _record_parts(a, *b.split("#", 1)),
)
RECORD_CLAIM: Kind[RecordClaim] = Kind(
    "record_claim",
    "RECDUP#{workspace_id}#{group}",
    "C#{digest}",
    "the exact-duplicate claim on a normalised text (claimed_until; TTL)",
    RecordClaim,
    Fields(
        record_id=Attr(read=lambda it: str(it.get("record_id") or "")),
        claimed_until=Attr.number("claimed_until", float),
        lock_version=Attr.number("lock_version", int),
    ),
    ref_parts=lambda a, b: _split("workspace_id", "digest", a, b),
)
RECORD_BAND: Kind[tuple[str, ...]] = Kind(
    "record_band",
    "RECBAND#{workspace_id}#{group}",
    "B#{band}",
    "the ids of the records whose MinHash band has that value",
    None,
    (None, items.record_band_row),
    ref_parts=lambda a, b: _split("workspace_id", "band", a, b),
    wire=True,
)
RECORD_TERM: Kind[None] = Kind(
    "",
    "RECTERM#{workspace_id}#{layer}#{term_hash}",
    "{impact}#{record_id}",
    "a search posting: the record's text holds the term (<term_hash> its hash) with BM25 weight <impact> "
    "(4 digits, so a Query reads the best first); written and removed with the record",
)
RUN_LINE: Kind[RunLine] = Kind(
    "",
    "RECRUN#{workspace_id}#{run_digest}",
    "{record_id}",
    "a Session raw line of a run, and whether it was consolidated",
    RunLine,
    Fields(
        consolidated=Attr(read=lambda it: bool(it.get("consolidated"))),
        claimed_until=Attr.number("claimed_until", float),
    ),
)


def _version_parts(anchor_key: str, number: str, rest: str) -> dict[str, Any]:
    """("version", anchor key, "<lock_version>#<rest>"): the number first, since a path may hold '#'."""
    return {"anchor": anchor_key, "path_hash": path_hash(rest), "lock_version": int(number)}


def _record_parts(workspace_id: str, layer: str, record_id: str) -> dict[str, Any]:
    return {
        "workspace_id": workspace_id,
        "partition": record_partition(layer, record_shard(record_id)),
        "public_id": record_id,
    }


def _kinds() -> list[Kind[Any]]:
    return [v for v in globals().values() if isinstance(v, Kind)]


# What a batch read answers for each `Ref.kind`.
BY_REF: Mapping[str, Kind[Any]] = {k.name: k for k in _kinds() if k.name}


def ref_key(ref: Ref[Any]) -> Key:
    """The key of the row a `Ref` names."""
    try:
        kind = BY_REF[ref.kind]
    except KeyError:
        raise ValueError(f"unknown ref kind {ref.kind}") from None
    return kind.ref_key(ref)


def read_row(ref: Ref[R], item: Item) -> R:
    """The row object a batch read answers for one ref."""
    if ref.kind == "version":
        # Its key holds the path only hashed: the ref holds it whole.
        row: R = BY_REF[ref.kind].read(item, rest=ref.b.partition("#")[2])
        return row
    row = BY_REF[ref.kind].read(item)
    return row


def layout() -> list[tuple[str, str]]:
    """(key shape, what the item holds) of every kind, in the order declared: the table's layout."""
    return [(k.shape.text(), k.holds) for k in _kinds() if k.holds]


# ---- what the index and claim kinds read back as (views of another row, not rows of their own) --------


def _parts(kind: Kind[Any], it: dict[str, Any]) -> dict[str, str]:
    parts = kind.shape.parse(it["pk"], it["sk"])
    if parts is None:
        raise ValueError(f"not a {kind.pk} {kind.sk} key: {it['pk']!r} {it['sk']!r}")
    return parts


def definition_row(item: Item) -> str:
    """The agent id a definition-name claim points at."""
    agent_id: str = unmarshal(item)["agent_id"]
    return agent_id


def agent_index_row(item: Item) -> tuple[str, str, str | None]:
    """(agent id, name, deployment) of the account's index entry of an agent."""
    it = unmarshal(item)
    return _parts(AGENT_INDEX, it)["public_id"], it["name"], it.get("deployment")


def memory_default_row(item: Item) -> tuple[str, str, MemoryDefault]:
    """(memory id, name, default) of a default's index entry."""
    it = unmarshal(item)
    d = items.memory_default(it.get("default"))
    if d is None:
        raise ValueError("a default index entry without its default")
    return _parts(MEMORY_DEFAULT, it)["memory_id"], it["name"], d


def memory_mount_items(e: Execution) -> list[Item]:
    """The account's index entries of the Memories an execution mounts: one per Memory (however many
    mounts name it), living as long as the execution (the table's TTL removes them after)."""
    mounted = dict.fromkeys(m.memory_id for m in e.mounts if m.memory_id is not None)
    return [
        marshal(
            dict(zip(("pk", "sk"), MEMORY_MOUNT.key(e.account_id, mid, e.public_id), strict=True))
            | {"expires_at": e.expires_at}
        )
        for mid in mounted
    ]


def memory_mount_row(item: Item) -> tuple[str, int]:
    """(memory id, expires_at) of a session-mount index entry."""
    it = unmarshal(item)
    return _parts(MEMORY_MOUNT, it)["memory_id"], int(it["expires_at"])


def idempotency_item(r: Record, attempt: str) -> Item:
    """A keyed request's record. `attempt` is new to each send, so a refusal showing this very item is this
    request's landed resend."""
    return IDEMPOTENCY.item(r) | {"attempt": {"S": attempt}}


def idempotency_record(it: dict[str, Any]) -> Record:
    """A record from its plain attributes (as a refused condition's old item comes back)."""
    return IDEMPOTENCY.decode(it)
