"""An in-memory store for the ports the memory domain uses: domain rules tested in milliseconds.

`FakeStore` implements `ResolverStore` (rows, documents, contents, history and the definition lookup the
resolver needs), the write budgets and the idempotency records, plus the few directory creates a test
needs to seed a caller, a workspace and a conversation. It is plain Python behind one lock.

It refuses what the real store refuses, with the same codes and messages: each write evaluates the
conditions the DynamoDB commit would send (store/documents.py, store/versions.py), collects the roles whose
condition fails, and lets the real store's own refusal tables (`_commit_refusals`, `_rename_refusals`,
read by `store.commit.explain`) name the error. So the precedence (the budget, spent before the commit as
the real store spends it, then a stop, the conversation, the row) and the wording cannot drift; the parity
test in tests/unit/test_domain_on_fake.py holds the rest of the behaviour to the moto-backed store.

Simplifications, on purpose:
- organization Memories (anchor scope "memory": their counter row, byte count and leases) are not
  modelled; a change under one raises NotImplementedError rather than pass unchecked;
- nothing is retried or resent, so there is no contention, no `storage_busy`, no "landed already";
- a conversation is never tombstoned here (no delete_conversation), and meters count per minute of the
  injected clock;
- a keyed request's idempotency record does not ride in the commit it guards (the unit of work's
  business, tested on the HTTP suite); `record_answer`, storing a refusal's record, is modelled.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from agent_memory.api.errors import ApiError, content_corrupt, stale, version_not_found
from agent_memory.core.idempotency import Record
from agent_memory.core.ids import sha256_hex
from agent_memory.core.model import (
    Account,
    Agent,
    Anchor,
    Author,
    Contents,
    Conversation,
    ConversationBump,
    Document,
    DocumentChange,
    ExecutionStop,
    Held,
    Human,
    Member,
    TokenRow,
    Version,
    Workspace,
    WriteBudget,
    max_documents,
)
from agent_memory.core.ports import IdempotencyRecords, Ref, ResolverStore, WriteBudgets
from agent_memory.store.commit import CONDITION_FAILED, Reason, Refusal, Refusals, explain
from agent_memory.store.content import content_missing
from agent_memory.store.documents import _budget_refusals, _commit_refusals, _rename_refusals

# What one failed condition leaves behind: its role and the old row as the refusal tables read it.
Failed = dict[str, dict[str, Any] | None]


@dataclass(slots=True)
class _Counter:
    minute: int
    n: int


class FakeStore:
    """The memory domain's ports in memory (see the module docstring for what is and is not modelled)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._lock = threading.RLock()
        self._clock = clock
        # Every row a Ref names (documents and version records included), as the real store answers it.
        self._rows: dict[Ref, Any] = {}
        self._contents: dict[str, str] = {}
        self._meters: dict[tuple[str, str], _Counter] = {}

    # ---- Reads --------------------------------------------------------------------------------------

    def get_many(self, refs: list[Ref]) -> dict[Ref, Any]:
        with self._lock:
            return {ref: self._rows.get(ref) for ref in dict.fromkeys(refs)}

    # ---- DocumentReads ------------------------------------------------------------------------------

    def list_documents(self, anchor: Anchor) -> list[Document]:
        with self._lock:
            docs = [row for row in self._rows.values() if isinstance(row, Document) and row.anchor == anchor]
        return sorted(docs, key=lambda d: d.rest)

    def list_many(self, anchors: list[Anchor]) -> dict[Anchor, list[Document]]:
        return {a: self.list_documents(a) for a in dict.fromkeys(anchors)}

    # ---- ContentReads / ContentWrites ---------------------------------------------------------------

    def _checked(self, held: Held) -> str | None:
        """The text at held.key (None when absent), held to its recorded hash as the store holds it."""
        with self._lock:
            text = self._contents.get(held.key)
        if text is not None and sha256_hex(text.encode("utf-8")) != held.sha256:
            raise content_corrupt(held.path, held.lock_version)
        return text

    def read_content(self, held: Held) -> str:
        text = self._checked(held)
        if text is None:
            raise content_missing()
        return text

    def read_contents(self, helds: list[Held]) -> Contents:
        texts: dict[str, str] = {}
        corrupt: set[str] = set()
        for held in {h.key: h for h in helds}.values():
            try:
                text = self._checked(held)
            except ApiError:
                corrupt.add(held.key)
                continue
            if text is not None:
                texts[held.key] = text
        return Contents(texts, frozenset(corrupt))

    def fetch_contents(self, helds: list[Held]) -> dict[str, Future[str | None]]:
        out: dict[str, Future[str | None]] = {}
        for held in {h.key: h for h in helds}.values():
            done: Future[str | None] = Future()
            try:
                done.set_result(self._checked(held))
            except ApiError as exc:
                done.set_exception(exc)
            out[held.key] = done
        return out

    def put_content(self, key: str, text: str) -> None:
        with self._lock:
            held = self._contents.get(key)
            # Write-once, as S3's If-None-Match makes it; the same text again is a resend that landed.
            if held is not None and held != text:
                raise ApiError("already_exists", "That content version already exists.")
            self._contents[key] = text

    def delete_content(self, key: str) -> None:
        with self._lock:
            self._contents.pop(key, None)

    # ---- WriteBudgets -------------------------------------------------------------------------------

    def spend(self, budget: WriteBudget | None) -> None:
        with self._lock:
            self._spend(budget)

    @contextmanager
    def spending(self, budget: WriteBudget | None) -> Iterator[None]:
        # Counted as the block begins, refused as it ends (ahead of what the block raised), as the real
        # store's meters are sent before the block and awaited after it.
        try:
            self.spend(budget)
            refused: ApiError | None = None
        except ApiError as exc:
            refused = exc
        try:
            yield
        finally:
            if refused is not None:
                raise refused

    # ---- DocumentWrites -----------------------------------------------------------------------------

    def commit(self, change: DocumentChange) -> None:
        with self._lock:
            self._spend(change.budget)
            creates = change.expected is None and change.new is not None
            failed: Failed = {}
            self._check_document(change, "document", failed)
            self._check_cap(change.anchor, 1 if creates else 0, failed, "meta")
            if change.bump is not None:
                self._check_bump(change.bump, "conversation", failed)
            if change.alias is not None:
                self._check_bump(change.alias, "alias", failed)
            self._check_running(change.running, failed)
            self._check_source(change, failed)
            self._refuse(failed, _commit_refusals(change, creates))
            self._apply(change)
            for bump in (change.bump, change.alias):
                if bump is not None:
                    self._bump(bump.conversation_id)

    def commit_rename(self, removal: DocumentChange, creation: DocumentChange) -> None:
        with self._lock:
            self._spend(creation.budget)
            failed: Failed = {}
            self._check_document(removal, "document", failed)
            self._check_document(creation, "target", failed)
            if removal.anchor != creation.anchor:
                self._check_cap(creation.anchor, 1, failed, "meta")
            bumped: dict[str, ConversationBump] = {}
            for role, bump in (
                ("conversation", creation.bump),
                ("alias", creation.alias),
                ("conversation_old", removal.bump),
                ("alias_old", removal.alias),
            ):
                if bump is not None and bump.conversation_id not in bumped:
                    bumped[bump.conversation_id] = bump
                    self._check_bump(bump, role, failed)
            self._check_running(tuple(dict.fromkeys((*creation.running, *removal.running))), failed)
            self._refuse(failed, _rename_refusals(removal, creation))
            self._apply(removal)
            self._apply(creation)
            for conversation_id in bumped:
                self._bump(conversation_id)

    # ---- Versions -----------------------------------------------------------------------------------

    def list_versions(self, anchor: Anchor, rest: str, low: int, high: int, limit: int) -> list[Version]:
        with self._lock:
            found = [
                row
                for row in self._rows.values()
                if isinstance(row, Version)
                and row.anchor == anchor
                and row.rest == rest
                and low <= row.lock_version <= high
            ]
        return sorted(found, key=lambda v: v.lock_version, reverse=True)[:limit]

    def redact_version(
        self, version: Version, expected: tuple[str, int], by: Author, at: str, budget: WriteBudget | None
    ) -> None:
        with self._lock:
            self._spend(budget)
            failed: Failed = {}
            current = self._rows.get(Ref.document(version.anchor, version.rest))
            if current is None or (current.public_id, current.lock_version) != expected:
                failed["document"] = None
            ref = Ref.version(version.anchor, version.rest, version.lock_version)
            record: Version | None = self._rows.get(ref)
            if record is None or record.public_id != version.public_id:
                failed["version"] = None
            # The refusal table store/versions.py builds for this transaction.
            by_role: dict[str, Refusal] = {
                "document": lambda _: stale(),
                "version": lambda _: version_not_found(version.lock_version),
            }
            self._refuse(failed, Refusals(by_role, otherwise=stale))
            assert record is not None
            self._rows[ref] = replace(record, content_key=None, redacted_at=at, redacted_by=by)

    # ---- Definitions --------------------------------------------------------------------------------

    def find_definition(self, steward_id: str, name: str) -> str | None:
        with self._lock:
            for row in self._rows.values():
                if (
                    isinstance(row, Agent)
                    and row.kind == "definition"
                    and (row.steward_id, row.name)
                    == (
                        steward_id,
                        name,
                    )
                ):
                    return row.public_id
        return None

    # ---- IdempotencyRecords -------------------------------------------------------------------------

    def record_answer(self, record: Record) -> Record | None:
        with self._lock:
            ref = Ref.idempotency(record.scope, record.key_digest)
            held: Record | None = self._rows.get(ref)
            if held is not None and held.expires_at > self._clock():
                return held
            self._rows[ref] = record
            return None

    # ---- the directory rows a test seeds (the real store's creates, refusing a taken key alike) ------

    def create_account(self, account: Account, human: Human, token: TokenRow) -> None:
        self._create(
            {Ref.account(account.public_id): account, Ref.human(human.public_id): human, Ref.token(token.digest): token}
        )

    def create_human(self, human: Human, token: TokenRow) -> None:
        self._create({Ref.human(human.public_id): human, Ref.token(token.digest): token})

    def create_workspace(self, workspace: Workspace, member: Member) -> None:
        self._create(
            {
                Ref.workspace(workspace.public_id): workspace,
                Ref.member(member.workspace_id, member.principal_id): member,
            }
        )

    def put_member(self, member: Member) -> None:
        with self._lock:
            self._rows[Ref.member(member.workspace_id, member.principal_id)] = member

    def create_conversation(self, conversation: Conversation) -> None:
        self._create({Ref.conversation(conversation.public_id): conversation}, "That conversation already exists.")

    # ---- conditions ---------------------------------------------------------------------------------

    def _create(self, rows: dict[Ref, Any], what: str = "That record already exists.") -> None:
        with self._lock:
            if any(ref in self._rows for ref in rows):
                raise ApiError("already_exists", what)
            self._rows.update(rows)

    def _check_document(self, change: DocumentChange, role: str, failed: Failed) -> None:
        if change.anchor.scope == "memory" or change.writer is not None:
            raise NotImplementedError("organization Memories (counter rows, leases) are not modelled here")
        current: Document | None = self._rows.get(Ref.document(change.anchor, change.rest))
        now = None if current is None else (current.public_id, current.lock_version)
        if now != change.expected:
            failed[role] = None

    def _check_cap(self, anchor: Anchor, count: int, failed: Failed, role: str) -> None:
        if count > 0 and len(self.list_documents(anchor)) + count > max_documents(anchor):
            failed[role] = None

    def _check_bump(self, bump: ConversationBump, role: str, failed: Failed) -> None:
        conv: Conversation | None = self._rows.get(Ref.conversation(bump.conversation_id))
        if conv is None:
            failed[role] = None
            return
        old = {"archived": conv.archived, "context_revision": conv.context_revision, "deleted_at": None}
        archived = bump.refuse_archived and conv.archived
        moved = bump.expected_context_revision is not None and bump.expected_context_revision != conv.context_revision
        if archived or moved:
            failed[role] = old

    def _spend(self, budget: WriteBudget | None) -> None:
        """The real store's `spend`: ahead of the change's own checks, each meter counted unless it refuses."""
        if budget is None:
            return
        minute = int(self._clock() // 60)
        failed: Failed = {}
        for m in budget.meters:
            counter = self._meters.get((m.subject, m.key))
            if counter is not None and counter.minute == minute and counter.n >= m.per_minute:
                failed[f"budget:{m.subject}"] = None
            elif counter is None or counter.minute != minute:
                self._meters[(m.subject, m.key)] = _Counter(minute, 1)
            else:
                counter.n += 1
        self._refuse(failed, Refusals(_budget_refusals(budget)))

    def _check_running(self, running: Iterable[str], failed: Failed) -> None:
        if any(self._rows.get(Ref.execution_stop(e)) is not None for e in running):
            failed["stopped"] = None

    def _check_source(self, change: DocumentChange, failed: Failed) -> None:
        need = change.requires
        if need is None:
            return
        record: Version | None = self._rows.get(Ref.version(need.anchor, need.rest, need.lock_version))
        if record is None or record.public_id != need.public_id or record.content_key is None:
            failed["source"] = None if record is None else {"public_id": record.public_id}

    def _refuse(self, failed: Failed, refusals: Refusals) -> None:
        """Raise what the real store raises for these failed conditions (nothing when none failed)."""
        if not failed:
            return
        err = explain([Reason(role, CONDITION_FAILED, old) for role, old in failed.items()], refusals)
        raise err if err is not None else stale()

    # ---- effects ------------------------------------------------------------------------------------

    def _apply(self, change: DocumentChange) -> None:
        ref = Ref.document(change.anchor, change.rest)
        if change.new is None:
            self._rows.pop(ref, None)
        else:
            self._rows[ref] = change.new
        pruned = None
        if change.prune is not None:
            pruned = Ref.version(change.anchor, change.rest, change.prune)
            self._rows.pop(pruned, None)
        if change.version is not None:
            self._rows[Ref.version(change.anchor, change.rest, change.version.lock_version)] = change.version
        for v in change.also:
            key = Ref.version(v.anchor, v.rest, v.lock_version)
            if key != pruned:
                self._rows[key] = v

    def _bump(self, conversation_id: str) -> None:
        ref = Ref.conversation(conversation_id)
        conv: Conversation = self._rows[ref]
        self._rows[ref] = replace(conv, context_revision=conv.context_revision + 1)

    # ---- for tests ----------------------------------------------------------------------------------

    def stop(self, execution_id: str, by: str) -> None:
        """Leave an execution's stop mark (its later commits are refused `execution_stopped`)."""
        with self._lock:
            self._rows[Ref.execution_stop(execution_id)] = ExecutionStop(execution_id, self._clock(), by)


# The fake stands in for exactly these ports (mypy checks each assignment).
_resolver_ports: type[ResolverStore] = FakeStore
_budget_port: type[WriteBudgets] = FakeStore
_idempotency_port: type[IdempotencyRecords] = FakeStore
