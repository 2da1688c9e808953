"""What the domain needs from storage, split by aggregate; nothing here knows boto3.

Each consumer names the composite it uses (a Context's `MemoryStore`, the directory's `DirectoryStore`,
...); the DynamoDB + S3 store implements their union, `Store`, and tests/fakes.py the memory domain's part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from typing import Any, Generic, Protocol

from typing_extensions import TypeVar

from agent_memory.core.idempotency import Record
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import (
    Account,
    Agent,
    Anchor,
    Attachment,
    Author,
    Contents,
    Conversation,
    Document,
    DocumentChange,
    EntryPage,
    Execution,
    ExecutionStop,
    ForkBase,
    Held,
    Human,
    Lease,
    Member,
    MemoryDefault,
    MemoryReference,
    MemoryStats,
    MergeChange,
    OrgMemory,
    Quarantine,
    RecordClaim,
    RunLine,
    Speaker,
    StoreEntry,
    TokenRow,
    TypedRecord,
    Version,
    VersionCheck,
    Workspace,
    WriteBudget,
)

# The row a Ref names; a bare `Ref` names any row (what a batch of mixed kinds holds).
R = TypeVar("R", covariant=True, default=Any)


@dataclass(frozen=True, slots=True)
class Ref(Generic[R]):
    """A logical row to fetch in a batch: ("workspace", id), ("member", ws, principal), ("document", anchor, rest).

    Typed by the row it names: `Ref.workspace(ws)` is a `Ref[Workspace]`, so `ref.row(got)` reads its row from
    a batch typed. The store's registry (store/kinds.py) holds each kind's key shape and codec; a unit test
    holds each factory's row type to the registry's."""

    kind: str
    a: str
    b: str = ""

    def row(self, got: Mapping[Ref, Any]) -> R | None:
        """This ref's row in a batch read's answer (None when absent)."""
        found: R | None = got.get(self)
        return found

    @staticmethod
    def token(digest: str) -> Ref[TokenRow]:
        return Ref("token", digest)

    @staticmethod
    def workspace(ws: str) -> Ref[Workspace]:
        return Ref("workspace", ws)

    @staticmethod
    def member(ws: str, principal_id: str) -> Ref[Member]:
        return Ref("member", ws, principal_id)

    @staticmethod
    def conversation(conv: str) -> Ref[Conversation]:
        return Ref("conversation", conv)

    @staticmethod
    def agent(agent_id: str) -> Ref[Agent]:
        return Ref("agent", agent_id)

    @staticmethod
    def speaker(speaker_id: str) -> Ref[Speaker]:
        return Ref("speaker", speaker_id)

    @staticmethod
    def human(human_id: str) -> Ref[Human]:
        return Ref("human", human_id)

    @staticmethod
    def account(account_id: str) -> Ref[Account]:
        return Ref("account", account_id)

    @staticmethod
    def execution(execution_id: str) -> Ref[Execution]:
        return Ref("execution", execution_id)

    @staticmethod
    def execution_stop(execution_id: str) -> Ref[ExecutionStop]:
        """The mark a stop leaves beside an execution (absent while it runs)."""
        return Ref("execution_stop", execution_id)

    @staticmethod
    def document(anchor: Anchor, rest: str) -> Ref[Document]:
        return Ref("document", anchor.key, rest)

    @staticmethod
    def idempotency(scope: str, key_digest: str) -> Ref[Record]:
        return Ref("idempotency", scope, key_digest)

    @staticmethod
    def memory(memory_id: str) -> Ref[OrgMemory]:
        return Ref("memory", memory_id)

    @staticmethod
    def memory_any(memory_id: str) -> Ref[OrgMemory]:
        """A Memory's row even while its deletion is under way."""
        return Ref("memory_any", memory_id)

    @staticmethod
    def memory_stats(memory_id: str) -> Ref[MemoryStats]:
        return Ref("memory_stats", memory_id)

    @staticmethod
    def lease(anchor: Anchor, rest: str) -> Ref[Lease]:
        return Ref("lease", anchor.key, rest)

    @staticmethod
    def record(workspace_id: str, layer: str, record_id: str) -> Ref[TypedRecord]:
        return Ref("record", workspace_id, f"{layer}#{record_id}")

    @staticmethod
    def record_claim(workspace_id: str, group: str, digest: str) -> Ref[RecordClaim]:
        return Ref("record_claim", workspace_id, f"{group}#{digest}")

    @staticmethod
    def record_band(workspace_id: str, group: str, band: str) -> Ref[tuple[str, ...]]:
        return Ref("record_band", workspace_id, f"{group}#{band}")

    @staticmethod
    def version(anchor: Anchor, rest: str, lock_version: int) -> Ref[Version]:
        return Ref("version", anchor.key, f"{lock_version}#{rest}")

    @staticmethod
    def entry_page(conversation_id: str, number: int) -> Ref[EntryPage]:
        """One of a conversation's store entry pages (an EntryPage, or None while it holds nothing)."""
        return Ref("entry_page", conversation_id, str(number))

    @staticmethod
    def fork_base(conversation_id: str) -> Ref[ForkBase]:
        """What a fork copied (a ForkBase), kept with the child."""
        return Ref("fork_base", conversation_id)


class DuplicateClaimed(Exception):
    """An append's exact-duplicate claim is held by another record: the append is a mention of it."""

    def __init__(self, record_id: str) -> None:
        super().__init__(record_id)
        self.record_id = record_id


class RecordMoved(Exception):
    """The record an append was being counted into changed before the commit: check the append again."""


class EntryPageFull(Exception):
    """The entry page a create chose filled up meanwhile (another create landed there): choose again."""


# ---- the port, split by aggregate ------------------------------------------------------------------
# Each Protocol below is one seam of the store (the mixins of store/__init__.py follow the same lines), so a
# domain service names only the parts it uses and a test can stand in for exactly those (tests/fakes.py).
# `Store` is their union: what the composition root builds and hands out.


class Reads(Protocol):
    """Batch reads: everything a request needs, in as few round trips as the keys allow."""

    def get_many(self, refs: list[Ref]) -> dict[Ref, Any]:
        """Every ref maps to its row object, or None when absent. Strongly consistent."""
        ...


class WriteBudgets(Protocol):
    def spend(self, budget: WriteBudget) -> None:
        """Count one mutation against each meter, or refuse `rate_limited`: a request spends its budget once,
        before its change commits, so a refused request changes nothing."""
        ...

    def spending(self, budget: WriteBudget | None) -> AbstractContextManager[None]:
        """`spend`, overlapped with the block: the meters are sent as it begins and awaited as it ends, and a
        refusal is raised then (ahead of anything the block raised), so a commit after the block is sent only
        for a request within its budget. For requests the block sends whatever the meters answer: an upload
        of the new version (a refusal leaves it unreferenced, for the sweeper), never a change."""
        ...


class DocumentReads(Protocol):
    def list_documents(self, anchor: Anchor) -> list[Document]:
        """Every document row of an anchor, ordered by path."""
        ...

    def list_many(self, anchors: list[Anchor]) -> dict[Anchor, list[Document]]:
        """`list_documents` for several anchors, queried in parallel."""
        ...


class DocumentWrites(Protocol):
    def commit(self, change: DocumentChange) -> None:
        """Apply one conditional change in one request, or refuse it and change nothing."""
        ...

    def commit_rename(self, removal: DocumentChange, creation: DocumentChange) -> None:
        """A delete and a create (the renamed document) in one transaction: both land or neither does."""
        ...


class ContentReads(Protocol):
    """Every read is checked against the SHA-256 its row recorded (`Held.sha256`): bytes that differ are
    never answered (memory_content_corrupt)."""

    def read_content(self, held: Held) -> str:
        """One content version; ApiError `memory_content_missing` when its object is gone,
        `memory_content_corrupt` (naming `held.path` and `held.lock_version`) when its bytes differ."""
        ...

    def read_contents(self, helds: list[Held]) -> Contents:
        """Several contents fetched in parallel, each once; immutable keys are served from the process cache.

        A key whose object is missing or corrupt is left out of `texts` rather than failing the others;
        a corrupt one is named in `corrupt`.
        """
        ...

    def fetch_contents(self, helds: list[Held]) -> dict[str, Future[str | None]]:
        """Each key's content as a future (None when its object is missing, raising `memory_content_corrupt`
        when it fails its check), fetched in parallel at most once; cancel what is not needed."""
        ...


class ContentWrites(Protocol):
    def put_content(self, key: str, text: str) -> None:
        """Store a new version; refuses `already_exists` if the key was ever written."""
        ...

    def delete_content(self, key: str) -> None:
        """Delete one content object now."""
        ...


class Versions(Protocol):
    """History records: written by the commit that makes each version, read and scrubbed here."""

    def list_versions(self, anchor: Anchor, rest: str, low: int, high: int, limit: int) -> list[Version]:
        """Up to `limit` history records of one path numbered `low`..`high`, newest first."""
        ...

    def redact_version(
        self, version: Version, expected: tuple[str, int], by: Author, at: str, budget: WriteBudget | None
    ) -> None:
        """Drop a record's content key if the document still holds `expected` (else `stale_object`)."""
        ...


class Definitions(Protocol):
    def find_definition(self, steward_id: str, name: str) -> str | None:
        """The agent id of a steward's named definition, if any."""
        ...


class DirectoryWrites(Definitions, Protocol):
    """Who is who, and what belongs to whom."""

    def create_account(self, account: Account, human: Human, token: TokenRow) -> None: ...
    def create_human(self, human: Human, token: TokenRow) -> None: ...
    def create_workspace(self, workspace: Workspace, member: Member) -> None: ...
    def put_member(self, member: Member) -> None: ...
    def create_agent(self, agent: Agent, token: TokenRow | None) -> None:
        """Refuses `already_exists` when a definition of that name exists under the steward."""
        ...

    def rotate_agent_token(self, agent: Agent, old_digest: str | None, new: TokenRow) -> None: ...
    def rotate_human_token(self, human: Human, old_digest: str | None, new: TokenRow, caller_digest: str) -> None:
        """Replace the Human's token if it still holds `old_digest` and the caller's token still stands,
        else `stale_object`."""
        ...

    def revoke_human_token(self, human: Human, old_digest: str | None, caller_digest: str) -> None:
        """Retire the Human's token (no token of theirs works until a rotation)."""
        ...

    def create_speaker(self, speaker: Speaker) -> None: ...
    def update_workspace_overrides(self, workspace_id: str, overrides: dict[str, str]) -> None: ...
    def update_workspace_dedup(self, workspace_id: str, enabled: bool) -> None: ...


class Conversations(Protocol):
    """Conversation rows and their workspace's index of them."""

    def create_conversation(self, conversation: Conversation) -> None: ...
    def room_conversations(self, workspace_id: str, after: str | None, limit: int) -> tuple[list[str], bool]:
        """A page of a workspace's conversation ids, oldest first, and whether more follow."""
        ...

    def delete_conversation(self, conversation: Conversation, deleted_by: str, at: float) -> None:
        """Tombstone a conversation (it reads as absent from then on), mark its anchor's rows for the
        sweeper and drop it from its workspace's index, in one transaction; `not_found` when it is gone."""
        ...

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
        `forked_at` marks it as forked from then on. Answers the updated row, or None under a keyed
        request, whose caller knows it."""
        ...


class ExecutionWrites(Protocol):
    def create_execution(self, execution: Execution) -> None:
        """Store a new execution row; it is never updated afterwards (its configuration is frozen)."""
        ...

    def stop_execution(self, execution: Execution, stopped_by: str, at: float, keep_until: int) -> None:
        """Leave the execution's stop mark (the first stop's stays; a second changes nothing), kept until
        `keep_until` (epoch seconds, the table's TTL)."""
        ...


class Forks(Protocol):
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
        """Create the child conversation and copies of the pointer rows in one transaction, with the
        parent's store entry pages, the fork's base, the child's first history records and the write
        budget; only a fork too large for one transaction sends its records and the budget in one request
        before it."""
        ...


class EntryWrites(Protocol):
    """A conversation's store entries (store/entries.py)."""

    def write_entry(
        self, conversation_id: str, page: int, entry: StoreEntry, expected: int | None, budget: WriteBudget | None
    ) -> None:
        """Create (expected None) or replace one entry in one page; stale_object, conversation_archived,
        or EntryPageFull when the page it chose filled up meanwhile."""
        ...

    def delete_entry(
        self, conversation_id: str, page: int, key: str, expected: int, budget: WriteBudget | None
    ) -> None: ...


class Merges(Protocol):
    def merge_into(
        self,
        parent_id: str,
        changes: list[MergeChange],
        versions: list[Version],
        expected_context_revision: int,
        budget: WriteBudget | None,
    ) -> None:
        """Land a merge's changes on the parent in one conditional commit (stale_object if it moved)."""
        ...


class OrgMemories(Protocol):
    """Organization Memories: their rows, claims, attachments and leases (store/memories.py)."""

    def create_memory(
        self,
        memory: OrgMemory,
        files: list[tuple[Document, Version]],
        stats: MemoryStats,
        handoff: VersionCheck | None = None,
    ) -> None:
        """The Memory with its claims, indexes, counter row and first files in one transaction
        (memory_name_taken when the name is claimed); `handoff` marks a promote's source version."""
        ...

    def memory_ids(self, account_id: str, after: str | None, limit: int) -> tuple[list[str], bool]:
        """A page of the account's Memory ids after `after`, and whether more follow."""
        ...

    def memory_defaults(self, account_id: str) -> list[tuple[str, str, MemoryDefault]]:
        """Every tenant default of the account: (memory id, name, default)."""
        ...

    def memory_references(self, account_id: str, memory_id: str | None = None) -> list[MemoryReference]:
        """The attachments of one Memory (or of every Memory of the account)."""
        ...

    def mounted_memories(self, account_id: str, now: float) -> set[str]:
        """The account's Memories that an execution unexpired at `now` mounts."""
        ...

    def account_agents(self, account_id: str) -> list[tuple[str, str, str | None]]:
        """Every agent of the account: (id, name, deployment)."""
        ...

    def update_memory(self, before: OrgMemory, after: OrgMemory) -> None:
        """Store `after` if the row still holds `before`'s revision, else stale_object."""
        ...

    def commit_import(self, changes: list[DocumentChange], before: OrgMemory, after: OrgMemory) -> None:
        """A Git import's file changes and then the Memory's row (as `update_memory`), in as few transactions
        as DynamoDB allows; an import that fits one lands whole or not at all."""
        ...

    def delete_memory(self, memory: OrgMemory, references: list[MemoryReference], *, final: bool) -> None:
        """Detach `references` (and with `final` remove the Memory) in one transaction."""
        ...

    def replace_attachments(
        self,
        agent: Agent,
        attached: tuple[Attachment, ...],
        added: list[str],
        removed: list[str],
        deployment: str | None,
    ) -> None:
        """Replace an agent's attachments (and deployment) if unchanged since `agent` was read."""
        ...

    def put_lease(self, lease: Lease, anchor_key: str) -> None:
        """Take or extend a lease, unless another holder's is unexpired (memory_leased)."""
        ...


# A search posting of a record: (term, impact), the word and its BM25 weight in the record's text.
Posting = tuple[str, int]


class Records(Protocol):
    """Typed records, their claims, bands, search postings and run lines (store/records.py).

    `indexed_records` is where a managed search engine would plug in for a deployment that outgrows the
    postings (docs/decisions.md): given the query's terms, it answers the records to rank."""

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
        """The record with its claim, band entries, postings under `terms`, superseded record and run line in
        one commit; a claim another record holds raises DuplicateClaimed."""
        ...

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
        """Count a mention or evidence into a live record (the stored record, when it could be read back);
        a replaced text moves its postings: `index` put, `unindex` removed."""
        ...

    def replace_record(
        self,
        before: TypedRecord,
        after: TypedRecord,
        bands: Sequence[str],
        budget: WriteBudget | None,
        *,
        index: Sequence[Posting] = (),
        unindex: Sequence[Posting] = (),
    ) -> None: ...
    def delete_record(
        self, rec: TypedRecord, expected: int, budget: WriteBudget | None, *, terms: Sequence[Posting] = ()
    ) -> None: ...
    def review_record(
        self,
        rec: TypedRecord,
        quarantine: Quarantine | None,
        budget: WriteBudget | None,
        *,
        terms: Sequence[Posting] = (),
    ) -> None: ...
    def workspace_records(self, workspace_id: str, layer: str) -> tuple[list[TypedRecord], bool]:
        """Every record of one layer of a workspace, and whether the read stopped at its bound."""
        ...

    def indexed_records(
        self, workspace_id: str, layer: str, terms: Sequence[str], per_term: int
    ) -> tuple[list[TypedRecord], bool]:
        """The records the `per_term` best-weighted postings of each term name, as a search reads them, and whether
        some term had more."""
        ...

    def write_postings(
        self, workspace_id: str, layer: str, postings: Sequence[tuple[str, Sequence[Posting]]], *, remove: bool = False
    ) -> None:
        """Put (or remove) the postings of (record id, its postings) pairs outside any record's commit (a reindex)."""
        ...

    def mark_records_indexed(self, workspace_id: str, version: int) -> None:
        """Searches of the workspace may use index `version` from now on."""
        ...

    @property
    def record_shards(self) -> int:
        """How many shards each layer of a workspace's records is spread over."""
        ...

    def record_page(
        self, workspace_id: str, layer: str, shard: int, after: str | None, limit: int
    ) -> tuple[list[TypedRecord], bool]:
        """Up to `limit` records of one shard of a layer in id order, after the id `after`, and whether
        the shard may hold more."""
        ...

    def run_lines(self, workspace_id: str, run_id: str) -> list[RunLine]: ...
    def claim_run_line(self, workspace_id: str, run_id: str, record_id: str, operation: str, until: float) -> bool: ...
    def finish_run_line(self, workspace_id: str, run_id: str, record_id: str, operation: str) -> None: ...


class IdempotencyRecords(Protocol):
    def record_answer(self, record: Record) -> Record | None:
        """Store a refusal's record unless the key already has one; answers the one it found, if any."""
        ...


# ---- what each consumer asks for -----------------------------------------------------------------


class MemoryStore(Reads, WriteBudgets, DocumentReads, DocumentWrites, ContentReads, ContentWrites, Versions, Protocol):
    """What the memory verbs reach through a Context: rows, documents, their contents and history."""


class ResolverStore(MemoryStore, Definitions, Protocol):
    """What the resolver reads to open a Context, and hands on to it."""


class DirectoryStore(Reads, WriteBudgets, DocumentReads, DirectoryWrites, Conversations, Forks, Protocol):
    """The directory's (domain/directory/service.py): accounts, workspaces, agents, conversations and forks."""


class ExecutionStore(WriteBudgets, ExecutionWrites, Protocol):
    """Executions' (domain/directory/executions.py)."""


class EntryStore(Reads, EntryWrites, Protocol):
    """A conversation's store entries' (domain/directory/entries.py)."""


class MergeStore(DocumentReads, Conversations, Merges, Protocol):
    """A fork's merge into its parent (domain/directory/merge.py)."""


class MemoriesStore(MemoryStore, OrgMemories, Protocol):
    """Organization Memories' (domain/memories/service.py): their rows, and their files as memory verbs see them."""


class RecordsStore(Reads, WriteBudgets, Records, Protocol):
    """Typed records' (domain/records/service.py)."""


class ExportStore(DocumentReads, ContentReads, Conversations, Protocol):
    """A workspace export's (render/export.py): every conversation's documents and their texts."""


class Store(
    MemoryStore,
    WriteBudgets,
    DirectoryWrites,
    Conversations,
    ExecutionWrites,
    Forks,
    EntryWrites,
    Merges,
    OrgMemories,
    Records,
    IdempotencyRecords,
    Protocol,
):
    """The whole port: what the composition root builds (store.DynamoStore) and hands out."""
