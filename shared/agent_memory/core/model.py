"""The rows the domain reasons about. Plain dataclasses: the store maps them to items, the HTTP glue to JSON."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from typing import Any, Literal

from agent_memory.core.lazy_dataclass import dataclass

PrincipalKind = Literal["human", "agent"]
AuthorKind = Literal["human", "agent", "sync"]
Role = Literal["curator", "member", "viewer"]

MAX_DOCUMENTS_PER_ANCHOR = 64
MAX_DOCUMENT_BYTES = 64 * 1024
MAX_DESCRIPTION_BYTES = 1024
# How long an execution's tools answer after it starts, unless the deployment says otherwise.
DEFAULT_EXECUTION_TTL_SECONDS = 24 * 3600
# How many executions deep a spawn may go: a tool call checks its own stop and every ancestor's in the batch
# it reads anyway, so this bounds what a stop costs each call (executions.py, resolver.py).
MAX_SPAWN_DEPTH = 8
# Versions a document keeps, its current one included (AGENT_MEMORY_VERSIONS_KEPT overrides it).
DEFAULT_VERSIONS_KEPT = 100
MAX_VERSIONS_KEPT = 10_000
# An organization Memory is a larger store than a conversation scope: reference material many sessions share.
MAX_MEMORY_FILES = 1000
MAX_MEMORY_FILE_BYTES = 1024 * 1024


def max_documents(anchor: Anchor) -> int:
    """How many documents an anchor holds."""
    return MAX_MEMORY_FILES if anchor.scope == "memory" else MAX_DOCUMENTS_PER_ANCHOR


def max_document_bytes(anchor: Anchor) -> int:
    """How large one document of an anchor may be."""
    return MAX_MEMORY_FILE_BYTES if anchor.scope == "memory" else MAX_DOCUMENT_BYTES


@dataclass(frozen=True, slots=True)
class Anchor:
    """What a document row hangs under: one scope's owner (or, for speaker/, the agent-speaker pair)."""

    scope: str
    owner_id: str
    speaker_id: str | None = None

    @property
    def key(self) -> str:
        if self.speaker_id:
            return f"{self.scope}#{self.owner_id}#{self.speaker_id}"
        return f"{self.scope}#{self.owner_id}"

    @classmethod
    def from_key(cls, key: str) -> Anchor:
        parts = key.split("#")
        return cls(parts[0], parts[1], parts[2] if len(parts) > 2 else None)


@dataclass(frozen=True, slots=True)
class TokenRow:
    digest: str
    principal_kind: PrincipalKind
    principal_id: str
    account_id: str
    # The principal's name, kept with the token so a write can name its author without another read
    # (None on a token row written before it was kept).
    principal_name: str | None = None


@dataclass(frozen=True, slots=True)
class Principal:
    kind: PrincipalKind
    public_id: str
    account_id: str
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Author:
    """Who made a version: the principal whose token made the change, and the run it came through.

    A git-synced Memory's versions are by the sync itself: kind "sync", name "git" and the commit read."""

    kind: AuthorKind
    public_id: str
    name: str | None = None
    execution_public_id: str | None = None
    commit: str | None = None


@dataclass(slots=True)
class Account:
    public_id: str
    name: str
    created_at: str
    # The Human created with the account: it may rotate and revoke any Human's credentials here.
    first_human_id: str | None = None


@dataclass(slots=True)
class Human:
    public_id: str
    account_id: str
    name: str
    created_at: str
    # The digest of the Human's current token (None once revoked): rotations are conditional on it.
    token_digest: str | None = None


@dataclass(slots=True)
class Agent:
    public_id: str
    account_id: str
    steward_id: str
    name: str
    kind: Literal["program", "definition"]
    memory_context_limit: dict[str, Any] | None
    created_at: str
    token_digest: str | None = None
    # Which deployment the agent runs in (a tenant default may reach one deployment's agents only).
    deployment: str | None = None
    # The organization Memories attached to it, in the order they were given, and a counter every change
    # of them moves (the PATCH that replaces them is conditioned on it).
    memories: tuple[Attachment, ...] = ()
    memories_revision: int = 0


@dataclass(slots=True)
class Speaker:
    public_id: str
    account_id: str
    agent_id: str
    name: str
    created_at: str


@dataclass(slots=True)
class Workspace:
    public_id: str
    account_id: str
    name: str
    created_at: str
    tool_provider_overrides: dict[str, str] = field(default_factory=dict)
    # settings.dedup.enabled: whether Workspace records are checked for duplicates (off for bulk imports).
    dedup_enabled: bool = True
    # The principal that created it (None on rows stored before it was kept): it may delete any of its
    # conversations.
    created_by: str | None = None
    # The version of the record search index (recordtext.INDEX_VERSION) every record of it is in; 0 for a
    # workspace made before the index, whose searches read every record until it is reindexed.
    records_index: int = 0


@dataclass(slots=True)
class Member:
    workspace_id: str
    principal_kind: PrincipalKind
    principal_id: str
    role: Role
    created_at: str


@dataclass(slots=True)
class Conversation:
    public_id: str
    workspace_id: str
    account_id: str
    created_by: str
    created_at: str
    context_revision: int = 0
    archived: bool = False
    memory_context: dict[str, Any] | None = None
    answering_agent_id: str | None = None
    parent_public_id: str | None = None
    # Epoch seconds of the last fork of this conversation, marked before the fork reads the rows it copies
    # (None: never forked).
    forked_at: int | None = None


@dataclass(frozen=True, slots=True)
class FrozenBinding:
    """One root of an execution as it resolved when the execution began: stored with it, never changed.

    A speaker root always names its subject, so an inherited speaker root keeps the person it was captured
    for whichever agent answers next.
    """

    name: str
    scope: str
    access: Literal["read", "read_write"]
    anchor_public_id: str
    conversation_public_id: str | None = None
    speaker_public_id: str | None = None
    agent_public_id: str | None = None

    @property
    def anchor(self) -> Anchor:
        if self.scope == "speaker":
            return Anchor("speaker", self.agent_public_id or "", self.speaker_public_id)
        return Anchor(self.scope, self.anchor_public_id)


@dataclass(slots=True)
class Execution:
    """One accepted model run: who started it, who answers, and the memory configuration frozen for it."""

    public_id: str
    workspace_id: str
    conversation_id: str
    account_id: str
    agent_id: str | None
    principal_kind: PrincipalKind
    principal_id: str
    speaker_id: str | None
    bindings: list[FrozenBinding]
    tools: list[str]
    created_at: str
    parent_id: str | None = None
    # The execution this one was started as mail from (peer mail), or None.
    mail_from_id: str | None = None
    # Epoch seconds past which its tools refuse (execution_expired); the table's TTL removes the row later.
    expires_at: int = 0
    # SHA-256 of the secret handed out once at creation: what the in-account tool function accepts.
    secret_digest: str | None = None
    # The principal's name when the execution began: the author name of the versions its tools write.
    principal_name: str | None = None
    # What the session sees as files, captured when it began (later changes to the Memories do not move it).
    mounts: list[Mount] = field(default_factory=list)
    # The executions it was spawned from, nearest first (at most MAX_SPAWN_DEPTH): a stop of any of them,
    # or the deletion of any of their conversations, stops this one too.
    ancestors: list[Ancestor] = field(default_factory=list)

    @property
    def lineage(self) -> list[Ancestor]:
        """This execution and its ancestors: whatever stops one of them stops it."""
        return [Ancestor(self.public_id, self.conversation_id), *self.ancestors]


@dataclass(frozen=True, slots=True)
class Ancestor:
    """An execution another was spawned from (directly or further up), and the conversation it runs in."""

    execution_id: str
    conversation_id: str


@dataclass(frozen=True, slots=True)
class ExecutionStop:
    """The mark a stop leaves beside an execution's row: final, never removed before its descendants expire."""

    execution_id: str
    stopped_at: float
    stopped_by: str


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    """A person signed in to the console. The cookie's random session id is kept only as its digest, and
    the token the person signed in with only as the digest its TOKEN row is keyed by: every request
    authenticates through that row, so rotating or revoking the token ends the session too."""

    session_digest: str
    human_id: str
    token_digest: str
    created_at: int
    expires_at: int


QuarantineStatus = Literal["pending", "released", "rejected"]


@dataclass(frozen=True, slots=True)
class Quarantine:
    """A version flagged as resembling prompt injection: which rules of which rule set, and its review.

    `pending` and `rejected` versions never reach a model; a `released` one is ordinary again."""

    status: QuarantineStatus
    rules: tuple[str, ...]
    ruleset: str
    reviewed_by: Author | None = None
    reviewed_at: str | None = None

    @property
    def hides(self) -> bool:
        return self.status != "released"


@dataclass(frozen=True, slots=True)
class Held:
    """A content object as a row names it: its key, the SHA-256 the row recorded for it, and the path and
    version it is read as. The store checks the bytes it fetches against `sha256` and names `path` and
    `lock_version` when they differ (memory_content_corrupt)."""

    key: str
    sha256: str
    path: str
    lock_version: int


@dataclass(frozen=True, slots=True)
class Contents:
    """Several checked contents by key; the keys whose bytes failed their check are named in `corrupt`
    (a missing object is in neither)."""

    texts: dict[str, str]
    corrupt: frozenset[str] = frozenset()


@dataclass(slots=True)
class Document:
    anchor: Anchor
    rest: str
    public_id: str
    lock_version: int
    bytesize: int
    sha256: str
    description: str | None
    written_at: str
    content_key: str
    author: Author
    # What the write-time scans found in this version's text: PII kinds (sorted) and injection flags.
    pii: tuple[str, ...] = ()
    quarantine: Quarantine | None = None

    @property
    def hidden_from_models(self) -> bool:
        return self.quarantine is not None and self.quarantine.hides

    def held(self, path: str) -> Held:
        """Its current content as read under `path` (the logical or absolute path the reader knows it by)."""
        return Held(self.content_key, self.sha256, path, self.lock_version)


Operation = Literal["write", "edit", "rollback", "promote", "fork", "merge", "rename"]


@dataclass(frozen=True, slots=True)
class PromotedFrom:
    """The version a promote copied: where it lives and which one it was.

    A promote into a new organization Memory also names who promoted it and when, and `memory_id` instead
    of `anchor_public_id` when the source was a Memory's file."""

    anchor_public_id: str
    path: str
    public_id: str
    lock_version: int
    memory_id: str | None = None
    promoted_by: Author | None = None
    promoted_at: str | None = None


@dataclass(frozen=True, slots=True)
class MergedFrom:
    """The child's version a merge landed: which fork, which document, which version."""

    conversation_public_id: str
    public_id: str
    lock_version: int


@dataclass(slots=True)
class Version:
    """One immutable version of a document, as its history records it.

    `content_key` is None once the version is redacted: its bytes are gone, the record (who, when, the
    hash) stays. `recorded_at` is when the record was stored (epoch seconds): the sweeper's grace is
    counted from it, since a fork's version keeps the `written_at` of the version it inherited.
    """

    anchor: Anchor
    rest: str
    public_id: str
    lock_version: int
    bytesize: int
    sha256: str
    description: str | None
    written_at: str
    content_key: str | None
    author: Author
    operation: Operation
    recorded_at: float
    overwrote_concurrent_edit: bool = False
    rolled_back_from: int | None = None
    # A rename's first version: the path the document had before (as the renaming request named it).
    renamed_from: str | None = None
    promoted_from: PromotedFrom | None = None
    forked_from: str | None = None  # the parent conversation's public id
    redacted_at: str | None = None
    redacted_by: Author | None = None
    pii: tuple[str, ...] = ()
    quarantine: Quarantine | None = None
    # Its object was handed to another anchor without a copy (a promote into a new Memory): a redaction
    # here never deletes the bytes at once; the sweeper does once no row holds them.
    handed_off: bool = False
    # The fork's version a merge landed on its parent (merge.py): None for every other operation.
    merged_from: MergedFrom | None = None

    @property
    def redacted(self) -> bool:
        return self.content_key is None

    @classmethod
    def of(cls, doc: Document, operation: Operation, recorded_at: float, **extra: Any) -> Version:
        """The record of the version a document row now points at."""
        return cls(
            doc.anchor,
            doc.rest,
            doc.public_id,
            doc.lock_version,
            doc.bytesize,
            doc.sha256,
            doc.description,
            doc.written_at,
            doc.content_key,
            doc.author,
            operation,
            recorded_at,
            **{"pii": doc.pii, "quarantine": doc.quarantine, **extra},
        )


@dataclass(frozen=True, slots=True)
class VersionCheck:
    """A version a commit relies on (a rollback's source): it must still be this document's, unredacted."""

    anchor: Anchor
    rest: str
    public_id: str
    lock_version: int


@dataclass(frozen=True, slots=True)
class ConversationBump:
    """Move a conversation's context_revision in the same commit as a document change."""

    conversation_id: str
    expected_context_revision: int | None = None
    refuse_archived: bool = True
    # The change is an execution's: the conversation deleted meanwhile stops it (execution_stopped).
    by_execution: bool = False


@dataclass(frozen=True, slots=True)
class Meter:
    """One count of writes per minute: a principal's, its account's, or a source address's."""

    subject: Literal["principal", "account", "origin"]
    key: str
    per_minute: int


@dataclass(frozen=True, slots=True)
class WriteBudget:
    """The meters one mutation spends from, once per request and before its commit (one conditional update
    each, outside the commit: store/documents.py `spend`, or `spending` alongside a content upload)."""

    meters: tuple[Meter, ...]


@dataclass(frozen=True, slots=True)
class DocumentChange:
    """One conditional document mutation: create (expected None), replace, or delete (new None)."""

    anchor: Anchor
    rest: str
    expected: tuple[str, int] | None
    new: Document | None
    bump: ConversationBump | None = None
    budget: WriteBudget | None = None
    # A change through a root aliasing another conversation moves that conversation too (its next reply
    # changes as well), and is refused in the same commit if it was archived meanwhile.
    alias: ConversationBump | None = None
    # The new version's history record, stored in the same commit, and the lock_version of the one record
    # that falls out of the retention bound with it (pruned in the same commit).
    version: Version | None = None
    prune: int | None = None
    # A version the change copies (a rollback's source), checked in the same commit.
    requires: VersionCheck | None = None
    # Other records of this document rewritten in the same commit (a review's verdict on a flagged version).
    also: tuple[Version, ...] = ()
    # An organization Memory's file: how the Memory's byte count moves, and who writes (a lease held by
    # anyone else refuses the change in the same commit).
    size_delta: int = 0
    writer: Author | None = None
    # When the change is stamped on the Memory's counter row (the new version's written_at, or the instant
    # a file is deleted): set where the change is made, so a caller knows the row the commit leaves.
    written_at: str | None = None
    # An execution's change: the executions whose stop halts it (itself and its ancestors). The commit
    # checks that none of them has been stopped, so no write lands once a stop is acknowledged.
    running: tuple[str, ...] = ()


# ---- what the verbs answer (views.py turns these into the wire JSON) ----------------------------------


@dataclass(frozen=True, slots=True)
class Located:
    """A document under the logical path a request names it by (`<root>/<rest>`)."""

    path: str
    document: Document
    content: str | None = None


@dataclass(frozen=True, slots=True)
class VersionPage:
    """One page of a document's history, newest first, and where the next page starts (None: no more)."""

    path: str
    versions: list[Version]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class ShownVersion:
    """One version with its text (None once redacted)."""

    path: str
    version: Version
    content: str | None


@dataclass(frozen=True, slots=True)
class GrepMatch:
    path: str
    line_number: int
    text: str


# Why a grep answer is not the whole answer: more matches than `limit`, more content than the request
# may read, or the request's deadline reached.
GrepTruncation = Literal["limit", "byte_budget", "deadline"]


@dataclass(frozen=True, slots=True)
class GrepResult:
    matches: list[GrepMatch]
    truncated_reason: GrepTruncation | None = None

    @property
    def truncated(self) -> bool:
        return self.truncated_reason is not None

    # Paths searched past because their content object is missing from storage (memory_content_missing).
    unreadable: tuple[str, ...] = ()
    # Paths searched past because their bytes no longer match their recorded hash (memory_content_corrupt).
    corrupt: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One tool call's answer: text written for the model, and the same facts as data for the runtime."""

    tool: str
    content: str
    data: Any = None
    code: str | None = None


# ---- organization Memories -------------------------------------------------------------------------

MemorySourceKind = Literal["native", "git"]
# One spelling of the access modes for attachments, defaults and mounts alike (lowercase, as the mounts'
# seed and every other value of the API are); the camelCase the attachments once took is refused by name.
AttachMode = Literal["readwrite", "readonly"]
CAMEL_MODES: dict[str, AttachMode] = {"readWrite": "readwrite", "readOnly": "readonly"}


def mode_respelled(value: object) -> str | None:
    """Why a mode in the old camelCase spelling is refused (a predicate for the field's name), else None."""
    if not isinstance(value, str) or value not in CAMEL_MODES:
        return None
    return f'is spelled "{CAMEL_MODES[value]}", not "{value}": access modes are lowercase (readwrite, readonly)'


def stored_mode(value: str) -> AttachMode:
    """A mode as stored; rows written before the spelling was settled hold the camelCase one."""
    mode = CAMEL_MODES.get(value, value)
    return "readwrite" if mode == "readwrite" else "readonly"


MAX_ATTACHMENTS = 16


@dataclass(frozen=True, slots=True)
class Attachment:
    """One Memory on an agent's list: how the agent may use it, and whether it is read into the session first."""

    memory_id: str
    mode: AttachMode
    read_first: bool


@dataclass(frozen=True, slots=True)
class GitOrigin:
    """Where a git-synced Memory's files come from; `commit` is the one last imported (None until the
    first import has landed whole)."""

    url: str
    ref: str
    path: str
    commit: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryDefault:
    """A tenant default: every agent of the account, or one deployment's agents, reach the Memory."""

    reach: Literal["account", "deployment"]
    deployment: str | None
    mode: AttachMode
    read_first: bool

    def reaches(self, agent: Agent) -> bool:
        return self.reach == "account" or (agent.deployment is not None and agent.deployment == self.deployment)


@dataclass(frozen=True, slots=True)
class MemoryAccess:
    """The Access panel: only these Humans, and the members of these workspaces, see the Memory."""

    humans: tuple[str, ...]
    workspaces: tuple[str, ...]


@dataclass(slots=True)
class OrgMemory:
    """A named, durable file store owned by an account (its files hang under the anchor `memory#<id>`)."""

    memory_id: str
    account_id: str
    name: str
    description: str
    source: MemorySourceKind
    created_by: Author
    created_at: str
    archived: bool = False
    git: GitOrigin | None = None
    default: MemoryDefault | None = None
    access: MemoryAccess | None = None
    promoted_from: PromotedFrom | None = None
    attachment_count: int = 0
    # Moved by every change of the row itself: a PATCH is conditioned on the one it read.
    revision: int = 0
    # Its deletion has begun (only the deletion itself reads such a row: to every other reader it is gone).
    deleting: bool = False

    @property
    def anchor(self) -> Anchor:
        return Anchor("memory", self.memory_id)


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """What a Memory's counter row keeps, moved by every commit of its files."""

    file_count: int
    bytesize: int
    written_by: Author | None
    written_at: str | None


def file_count_delta(change: DocumentChange) -> int:
    """How a change moves its scope's count of files: a create adds one, a delete takes one."""
    return 1 if change.expected is None else -1 if change.new is None else 0


def stats_after(stats: MemoryStats, changes: Sequence[DocumentChange]) -> MemoryStats:
    """The counter row a Memory's commit of `changes` leaves, from the row it found: the counts moved,
    and the last change's writer and instant."""
    if not changes:
        return stats
    last = changes[-1]
    return MemoryStats(
        stats.file_count + sum(map(file_count_delta, changes)),
        stats.bytesize + sum(c.size_delta for c in changes),
        last.new.author if last.new is not None else last.writer,
        last.written_at,
    )


@dataclass(frozen=True, slots=True)
class MemoryReference:
    """An agent a Memory reaches by attachment (the edge the Memory's detail and the map read)."""

    memory_id: str
    agent_id: str
    agent_name: str
    mode: AttachMode
    read_first: bool


@dataclass(frozen=True, slots=True)
class Lease:
    """A short claim on one file of a Memory: while it lasts, only its holder's writes land there."""

    memory_id: str
    path: str
    holder: Author
    expires_at: float


MountKind = Literal["memory", "agent", "user"]
MountMode = Literal["readonly", "readwrite"]


@dataclass(frozen=True, slots=True)
class Mount:
    """One folder of a session's file tree: a Memory under /workspace (configured) or /memory/<name>
    (the agent's attachments and defaults), or the server-managed /memory/agent and /memory/user."""

    path: str
    kind: MountKind
    mode: MountMode
    source: MemorySourceKind = "native"
    memory_id: str | None = None
    name: str | None = None
    read_first: bool | None = None
    # The Memory's description when the session began: what the block offers the model to open on demand.
    description: str | None = None


# ---- typed records -----------------------------------------------------------------------------------

RecordLayer = Literal["Workspace", "Session"]
RECORD_TYPES = ("decision", "correction", "violation", "solution", "file", "preference", "fact", "raw")
SOURCE_KINDS = ("agent", "user", "tool", "import", "consolidation")
MAX_RECORD_BYTES = 16 * 1024
MAX_RECORD_LABELS = 16
MAX_LABEL_CHARS = 64


@dataclass(slots=True)
class TypedRecord:
    """One typed record: a small fact an agent appends as it works (records.py holds its rules).

    Its text lives inline in its own item (at most 16 KiB, far under DynamoDB's 400 KB item), so a read
    or a search costs no S3 request. `group` is the digest of what duplicates are checked within;
    `content_digest` the identity of its normalised text."""

    public_id: str
    workspace_id: str
    layer: RecordLayer
    type: str
    content: str
    author: Author
    created_at: str
    updated_at: str
    lock_version: int = 1
    facet: str | None = None
    labels: tuple[str, ...] = ()
    run_id: str | None = None
    source_kind: str = "agent"
    source_ref: str | None = None
    visibility: str = "workspace"
    user_id: str | None = None
    observed_at: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    mention_count: int = 1
    evidence_count: int = 1
    pii: tuple[str, ...] = ()
    quarantine: Quarantine | None = None
    content_digest: str = ""
    group: str = ""
    operation_id: str = ""
    last_seen_at: str | None = None

    @property
    def stability(self) -> float:
        """How settled the record is: each independent piece of evidence halves the doubt (records.py)."""
        return round(1 - 0.5**self.evidence_count, 6)

    @property
    def hidden(self) -> bool:
        """Quarantined and not released: no one but a curator sees it."""
        return self.quarantine is not None and self.quarantine.hides


@dataclass(frozen=True, slots=True)
class RecordClaim:
    """The exact-duplicate key: this normalised text in this group belongs to `record_id` until
    `claimed_until` (epoch seconds). A conditional put on it is what makes concurrent appends exact."""

    record_id: str
    claimed_until: float
    # The record's lock_version when it took the text: an update since (a new text) ends the claim.
    lock_version: int = 0


@dataclass(frozen=True, slots=True)
class RunLine:
    """A Session `raw` record as its run's consolidation sees it."""

    record_id: str
    consolidated: bool
    claimed_by: str | None
    claimed_until: float


# ---- conversation store entries and merges -------------------------------------------------------------

# A conversation's store entries (entries.py): client state no prompt reads.
MAX_STORE_ENTRIES = 64
MAX_STORE_ENTRY_BYTES = 16 * 1024
# They live in ENTRY_PAGES items of at most ENTRIES_PER_PAGE entries each (store/keys.py, docs/decisions.md).
ENTRY_PAGES = 4
ENTRIES_PER_PAGE = MAX_STORE_ENTRIES // ENTRY_PAGES
# What a store entry's key may be (edges/requests/conversations.py and entries.py match it with \Z).
STORE_ENTRY_KEY = r"[A-Za-z0-9._:-]{1,128}"


@dataclass(frozen=True, slots=True)
class StoreEntry:
    """One store entry: its key, its version, its value as compact JSON text and that text's size."""

    key: str
    lock_version: int
    value_json: str
    bytesize: int
    updated_at: str


@dataclass(frozen=True, slots=True)
class EntryPage:
    """One of a conversation's entry pages as read: its number and the entries it holds, by key."""

    conversation_id: str
    number: int
    entries: dict[str, StoreEntry]


@dataclass(frozen=True, slots=True)
class ForkBase:
    """What a fork copied: each conversation/ document's (public_id, lock_version) by path at the fork,
    kept with the child so a merge knows the base of a document either side has since changed or deleted."""

    conversation_id: str
    parent_public_id: str
    documents: dict[str, tuple[str, int]]


@dataclass(frozen=True, slots=True)
class MergeChange:
    """One path a merge changes on the parent: the pair it expects there (None: absent) and the row it
    leaves (None: deleted)."""

    rest: str
    expected: tuple[str, int] | None
    new: Document | None


@dataclass(frozen=True, slots=True)
class MergeConflict:
    """A path changed on both sides to different content: each side's pair, None where absent."""

    path: str
    base: tuple[str, int] | None
    parent: tuple[str, int] | None
    child: tuple[str, int] | None
