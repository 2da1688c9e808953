"""Typed records: append with exact de-duplication and near-duplicate merging, read, update, supersede,
delete, review, search and consolidation.

Documents are what a model reads whole; records are the many small facts an agent appends as it works.
Both live under the same workspaces, principals and standing (a viewer reads, a member writes, a curator
also reviews), the same write budget, Idempotency-Key and content scans.

Duplicates (Workspace layer only) are checked within a *group*: the workspace, type and facet, and the
record's visibility, owner (its author principal, which is also its source application when that is an
agent) and end user (`user_id`). Records of different groups never merge. Within a group:

- identical text (after `recordtext.normalise`: case and whitespace) whose claim is under an hour old is
  a *mention*: no record is made, the holder's `mention_count` grows. The claim is one item per
  (group, normalised text) put with a condition, so N concurrent identical appends make one record and
  N-1 mentions, never two records;
- otherwise the nearest record by Jaccard of word 2-shingles, if at least `recordtext.NEAR_DUPLICATE`,
  absorbs it as *evidence*: `evidence_count` grows and `stability` = 1 - 0.5**evidence_count. Its text
  is replaced by the new one when the new one has more words (the more detailed wording is kept);
- candidates come from MinHash bands (`recordtext.band_keys`): one item per band value lists the ids
  sharing it, read in the append's first batch with the token, so finding them costs one more batch read
  of at most MAX_CANDIDATES records whatever the workspace holds.

A quarantined append, an append that supersedes another and any append while `dedup.enabled` is off is
stored as a record of its own and indexed for nothing (it is never a merge target).

An export walks every record the caller may read, both layers, shard by shard in id order, with each
writer-chosen text field masked for personal data (`safety.pii.mask`); its pages are bounded in records
read and in bytes, and the cursor names the shard and the last id read (docs/decisions.md).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, Final, Protocol

from agent_memory.api.errors import ApiError
from agent_memory.core import access, clock
from agent_memory.core.budget import Budgets
from agent_memory.core.idempotency import settle, suspended
from agent_memory.core.ids import PresentedToken, is_uuid, now_iso, uuid7
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import Author, Principal, Quarantine, TypedRecord, Workspace, WriteBudget
from agent_memory.core.ports import DuplicateClaimed, RecordMoved, RecordsStore, Ref
from agent_memory.core.resolver import Resolver, require_token
from agent_memory.domain.memory.service import scan
from agent_memory.domain.records import text as recordtext
from agent_memory.domain.safety.pii import mask

# How long identical text counts as a mention of the record that first held it.
MENTION_WINDOW_SECONDS = 3600
# Band entries read per band value (newest first) and candidates compared in all.
PER_BAND = 8
MAX_CANDIDATES = 32
# How many times an append counted into a record that moved under it (merged into, superseded, deleted)
# looks again before it answers storage_busy.
ABSORB_ATTEMPTS = 8
# How long one consolidation holds a raw line before another may take it over (a crashed one).
CONSOLIDATION_LEASE_SECONDS = 120
# Raw lines one consolidation call works through, and the time it may start another in (its function
# has 29 s); the answer says how many remain for the next call.
MAX_CONSOLIDATED_LINES = 100
CONSOLIDATION_SECONDS = 20.0
DEFAULT_SEARCH_LIMIT = 20
# A search of an indexed workspace reads the POSTINGS_PER_TERM best-weighted postings of each query term, fewer
# when the query has many terms, so that it ranks at most MAX_SEARCH_CANDIDATES records whatever the
# workspace holds: its cost follows what it may answer, not what is stored.
POSTINGS_PER_TERM = 256
MAX_SEARCH_CANDIDATES = 1024
# A record waiting for review is also posted under this term, which no query can spell (query words never
# hold a NUL), at impact 0, so its postings read newest first: a curator's listing of what waits reads them
# instead of every record. Records carry it from index version 2 on (recordtext.INDEX_VERSION).
PENDING: Final = ("\x00pending", 0)
PENDING_SINCE: Final = 2
# Records a reindex reads, and writes postings for, at a time.
REINDEX_PAGE = 100
# One export page reads at most this many records (lines or left out), and stops before its lines pass
# EXPORT_PAGE_BYTES as estimated by `_export_weight`: a Lambda answers at most 6 MB.
EXPORT_PAGE_RECORDS = 1000
EXPORT_PAGE_BYTES = 3 * 1024 * 1024
# The order an export walks the layers in.
EXPORT_LAYERS = ("Workspace", "Session")
# What of a line `_export_weight` does not count (ids, instants, counters, the quarantine's rules), with room.
_EXPORT_LINE_OVERHEAD = 2048


@dataclass(frozen=True, slots=True)
class RecordSpec:
    """An append as the request asks for it (edges/requests/records.py has checked every field)."""

    content: str
    type: str
    layer: str = "Workspace"
    run_id: str | None = None
    facet: str | None = None
    labels: tuple[str, ...] = ()
    source_kind: str | None = None
    source_ref: str | None = None
    visibility: str = "workspace"
    user_id: str | None = None
    observed_at: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    supersedes: str | None = None


@dataclass(frozen=True, slots=True)
class Appended:
    record: TypedRecord
    merged: bool
    content_replaced: bool
    operation_id: str

    @property
    def status(self) -> int:
        return 200 if self.merged else 201


@dataclass(frozen=True, slots=True)
class SearchSpec:
    query: str | None = None
    type: str | None = None
    facet: str | None = None
    layer: str = "Workspace"
    run_id: str | None = None
    user_id: str | None = None
    include_superseded: bool = False
    include_expired: bool = False
    quarantine: str | None = None
    limit: int = DEFAULT_SEARCH_LIMIT
    cursor: str | None = None
    # A model's search (its memory_search tool): quarantined text never reaches a model, so not even a
    # curator's execution is shown the records a curator's own search lists for review.
    for_model: bool = False

    def fingerprint(self) -> str:
        fields: list[Any] = [self.query, self.type, self.facet, self.layer, self.run_id, self.user_id]
        fields += [self.include_superseded, self.include_expired, self.quarantine, self.for_model]
        return hashlib.sha256(json.dumps(fields).encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class SearchPage:
    results: list[tuple[TypedRecord, float]]
    next_cursor: str | None
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class ExportPage:
    """One page of a workspace's records, masked; a page may hold fewer lines than it read (even none)
    and still name the next one."""

    records: list[TypedRecord]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class Consolidation:
    created: int
    merged: int
    instructions_ignored: bool
    remaining: int
    extraction: str = "rules"


class Extractor(Protocol):
    """What turns a raw line into typed clauses. The rules below are the one shipped; a model-backed one
    (Bedrock in AWS) would read `instructions` and plug in here, off by default."""

    name: str
    reads_instructions: bool

    def extract(self, text: str, instructions: str | None) -> list[tuple[str, str]]:
        """(type, clause) pairs, in the order the text says them."""
        ...


class RuleExtractor:
    """Clauses split by rule, speaker prefixes stripped, each typed by cue phrases (recordtext.py)."""

    name = "rules"
    reads_instructions = False

    def extract(self, text: str, instructions: str | None) -> list[tuple[str, str]]:
        return [(recordtext.classify(c), c) for c in recordtext.clauses(text)]


@dataclass(frozen=True, slots=True)
class InExecution:
    """A model's tool call: its principal was authenticated when the execution was opened (by token or by
    the execution's own secret, resolver.execution), so there is no token left to present here. Standing
    is still read now, from the workspace and membership rows, exactly as for a token."""

    principal: Principal
    execution_public_id: str


# Who a call acts as: the token an HTTP request presented, or an execution already opened.
Acting = PresentedToken | InExecution | None


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking, and their standing in the workspace."""

    principal: Principal
    workspace: Workspace
    role: str
    execution_public_id: str | None = None

    def author(self) -> Author:
        # A record a model appended names the run it came through, as a document version does.
        p = self.principal
        return Author(p.kind, p.public_id, p.name, self.execution_public_id)

    def sees(self, rec: TypedRecord | None) -> bool:
        return access.sees_record(self.principal, self.workspace, self.role, rec)


def group_of(
    workspace_id: str, type_: str, facet: str | None, visibility: str, author: str, user_id: str | None
) -> str:
    """The digest of what duplicates are checked within (its parts are never merged across)."""
    parts = [workspace_id, type_, facet, visibility, author, user_id]
    return hashlib.sha256(json.dumps(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _searchable_text(rec: TypedRecord) -> str:
    return " ".join([rec.content, rec.facet or "", *rec.labels])


def index_terms(rec: TypedRecord) -> tuple[tuple[str, int], ...]:
    """The (term, impact) postings a record is found under: the words of its tags first (few, and chosen to
    be searched by), then its content's, weighed in the text `rank` reads (`_searchable_text`); and, while it
    waits for review, PENDING. Every write works from these, so the pending posting comes and goes with the
    record's state in the same commits as its words' postings do."""
    words = recordtext.postings(_searchable_text(rec), rec.facet or "", *rec.labels)
    if rec.quarantine is not None and rec.quarantine.status == "pending":
        return (*words, PENDING)
    return words


def _moved_terms(
    before: TypedRecord, after: TypedRecord
) -> tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]:
    """(postings to put, postings to remove) when a record's text goes from `before` to `after`; a word
    whose impact changed moves from one key to another."""
    old, new = index_terms(before), index_terms(after)
    return tuple(t for t in new if t not in old), tuple(t for t in old if t not in new)


def _expired(rec: TypedRecord, now: float) -> bool:
    return rec.valid_to is not None and clock.epoch_of(rec.valid_to) < now


class RecordsService:
    def __init__(
        self,
        store: RecordsStore,
        resolver: Resolver,
        budgets: Budgets | None = None,
        extractor: Extractor | None = None,
    ) -> None:
        self.store = store
        self.resolver = resolver
        self.budgets = budgets or Budgets()
        self.extractor: Extractor = extractor or RuleExtractor()

    # ---- the caller ---------------------------------------------------------------------------------

    def _caller(
        self, acting: Acting, ws_id: str, extra: Iterable[Ref] = (), *, write: bool
    ) -> tuple[Caller, dict[Ref, Any]]:
        execution = None
        if isinstance(acting, InExecution):
            principal, execution = acting.principal, acting.execution_public_id
            got = self.store.get_many([Ref.workspace(ws_id), Ref.member(ws_id, principal.public_id), *extra])
        else:
            tok = require_token(acting)
            principal, got = self.resolver.first_round(
                tok, [Ref.workspace(ws_id), Ref.member(ws_id, tok.principal_id), *extra]
            )
        ws = got[Ref.workspace(ws_id)]
        role = access.workspace_role(principal, ws, got[Ref.member(ws_id, principal.public_id)])
        if role is None or ws is None:
            raise access.not_found("workspace")
        if write:
            access.require_workspace_write(role)
        return Caller(principal, ws, role, execution), got

    def _record_refs(self, ws_id: str, record_id: str) -> list[Ref]:
        return [Ref.record(ws_id, "Workspace", record_id), Ref.record(ws_id, "Session", record_id)]

    def _found(self, caller: Caller, got: dict[Ref, Any], record_id: str, *, write: bool = False) -> TypedRecord:
        refs = self._record_refs(caller.workspace.public_id, record_id)
        rec: TypedRecord | None = next((got[ref] for ref in refs if got.get(ref) is not None), None)
        return access.reaches_record(caller.principal, caller.workspace, caller.role, rec, write=write)

    def _opened(self, presented: Acting, ws_id: str, record_id: str, *, write: bool) -> tuple[Caller, TypedRecord]:
        # Standing is judged after the record is found (access.reaches_record): a viewer asking to change a
        # record it may not see learns no more than that nothing is there.
        caller, got = self._caller(presented, ws_id, self._record_refs(ws_id, record_id), write=False)
        return caller, self._found(caller, got, record_id, write=write)

    # ---- append -------------------------------------------------------------------------------------

    def append(self, presented: Acting, ws_id: str, spec: RecordSpec) -> Appended:
        if isinstance(presented, InExecution):
            tok: Acting = presented
            author_key = f"{presented.principal.kind}:{presented.principal.public_id}"
        else:
            tok = require_token(presented)
            author_key = f"{tok.principal_kind}:{tok.principal_id}"
        group = group_of(ws_id, spec.type, spec.facet, spec.visibility, author_key, spec.user_id)
        digest = recordtext.content_digest(spec.content)
        checked = spec.layer == "Workspace" and spec.supersedes is None
        shingles = recordtext.shingles(spec.content) if checked else frozenset()
        bands = recordtext.band_keys(shingles) if checked else ()
        extra: list[Ref] = []
        if checked:
            extra += [Ref.record_claim(ws_id, group, digest), *(Ref.record_band(ws_id, group, b) for b in bands)]
        if spec.supersedes is not None:
            extra += self._record_refs(ws_id, spec.supersedes)
        caller, got = self._caller(tok, ws_id, extra, write=True)
        now = clock.now()
        at = now_iso()
        pii, quarantine = scan(spec.content)
        operation = uuid7()
        rec = TypedRecord(
            public_id=uuid7(),
            workspace_id=ws_id,
            layer=spec.layer,  # type: ignore[arg-type]
            type=spec.type,
            content=spec.content,
            author=caller.author(),
            created_at=at,
            updated_at=at,
            facet=spec.facet,
            labels=spec.labels,
            run_id=spec.run_id,
            source_kind=spec.source_kind or ("agent" if caller.principal.kind == "agent" else "user"),
            source_ref=spec.source_ref,
            visibility=spec.visibility,
            user_id=spec.user_id,
            observed_at=spec.observed_at,
            valid_from=spec.valid_from,
            valid_to=spec.valid_to,
            supersedes=spec.supersedes,
            pii=pii,
            quarantine=quarantine,
            content_digest=digest,
            group=group,
            operation_id=operation,
        )
        old = None
        if spec.supersedes is not None:
            old = self._found(caller, got, spec.supersedes)
            if old.superseded_by is not None:
                raise ApiError("stale_object", f"Record {old.public_id} is already superseded by {old.superseded_by}.")
        # Spent once: a duplicate check may try more than one commit (a claim taken meanwhile, a record moved),
        # and the request is still one mutation.
        spent = self.budgets.of(caller.principal)
        if not (checked and caller.workspace.dedup_enabled and quarantine is None):
            if spent is not None:
                self.store.spend(spent)
            appended = Appended(rec, False, False, operation)
            settle(appended)
            self.store.create_record(
                rec,
                claim_until=None,
                dead_claim=None,
                bands=(),
                supersede=old,
                run_line=spec.layer == "Session" and spec.type == "raw",
                terms=index_terms(rec),
                budget=None,
                now=now,
            )
            return appended
        for _ in range(ABSORB_ATTEMPTS):
            try:
                return self._deduplicated(caller, got, rec, shingles, bands, now, spent)
            except RecordMoved:
                spent = None  # by the first attempt, whose commit came after its meters
                # The record this append was counted into changed between its read and the commit
                # (merged into, superseded, deleted): look again from the claim and the bands.
                got = self.store.get_many(list(got))
                now = clock.now()
        raise ApiError(
            "storage_busy",
            "The records this one duplicates kept changing while it was checked: send it again.",
            retry_after_seconds=1,
        )

    def _absorbable(self, caller: Caller, rec: TypedRecord | None, group: str, now: float) -> TypedRecord | None:
        if rec is None or rec.layer != "Workspace" or rec.group != group or rec.superseded_by is not None:
            return None
        if rec.hidden or _expired(rec, now) or not caller.sees(rec):
            return None
        return rec

    def _deduplicated(
        self,
        caller: Caller,
        got: dict[Ref, Any],
        rec: TypedRecord,
        shingles: frozenset[str],
        bands: tuple[str, ...],
        now: float,
        spent: WriteBudget | None,
    ) -> Appended:
        ws_id, group = rec.workspace_id, rec.group
        claim = got.get(Ref.record_claim(ws_id, group, rec.content_digest))
        held = claim.record_id if claim is not None and claim.claimed_until > now else None
        ids: list[str] = [] if held is None else [held]
        for band in bands:
            for rid in (got.get(Ref.record_band(ws_id, group, band)) or ())[:PER_BAND]:
                if rid not in ids:
                    ids.append(rid)
        ids = ids[:MAX_CANDIDATES]
        # The meters go out with the candidates' read (one step, not two): whatever it finds, the request
        # spends the same, and a refusal is raised before any commit.
        with self.store.spending(spent):
            rows = self.store.get_many([Ref.record(ws_id, "Workspace", rid) for rid in ids]) if ids else {}
        found = {
            rid: self._absorbable(caller, rows.get(Ref.record(ws_id, "Workspace", rid)), group, now) for rid in ids
        }
        dead = None
        if held is not None:
            target = found.get(held)
            if target is not None and (
                target.content_digest == rec.content_digest
                or (claim is not None and target.lock_version == claim.lock_version)
            ):
                return self._absorb(rec, target, mention=True)
            # Its record is gone, superseded or hidden, or an update has given it another text since it
            # took this one: the claim may be taken over.
            dead = held
        best: tuple[float, str, TypedRecord] | None = None
        for rid, cand in found.items():
            if cand is None:
                continue
            if (
                cand.content_digest == rec.content_digest
                and now - clock.epoch_of(cand.last_seen_at or cand.created_at) < MENTION_WINDOW_SECONDS
            ):
                # Identical text written within the hour whose claim this append missed (read a moment
                # before that record's commit landed): a mention, as the claim would have said.
                return self._absorb(rec, cand, mention=True)
            score = recordtext.jaccard(shingles, recordtext.shingles(cand.content))
            if score >= recordtext.NEAR_DUPLICATE and (best is None or (score, rid) > (best[0], best[1])):
                best = (score, rid, cand)
        until = now + MENTION_WINDOW_SECONDS
        try:
            if best is not None:
                return self._absorb(rec, best[2], mention=False, claim_until=until, dead=dead, new_bands=bands)
            appended = Appended(rec, False, False, rec.operation_id)
            settle(appended)
            self.store.create_record(
                rec,
                claim_until=until,
                dead_claim=dead,
                bands=bands,
                supersede=None,
                run_line=False,
                terms=index_terms(rec),
                budget=None,
                now=now,
            )
            return appended
        except DuplicateClaimed as taken:
            # A concurrent append of the same text made its record first: this one is a mention of it.
            holder = self.store.get_many([Ref.record(ws_id, "Workspace", taken.record_id)])
            target = self._absorbable(caller, holder.get(Ref.record(ws_id, "Workspace", taken.record_id)), group, now)
            if target is None:
                raise ApiError(
                    "storage_busy",
                    "A duplicate of this record changed while it was checked: send it again.",
                    retry_after_seconds=1,
                ) from None
            return self._absorb(rec, target, mention=True)

    def _absorb(
        self,
        new: TypedRecord,
        target: TypedRecord,
        *,
        mention: bool,
        claim_until: float | None = None,
        dead: str | None = None,
        new_bands: tuple[str, ...] = (),
    ) -> Appended:
        """`new` counted into `target`: a mention, or evidence (with its text kept when it says more)."""
        at = now_iso()
        replaced = None
        if not mention and len(recordtext.words(new.content)) > len(recordtext.words(target.content)):
            replaced = replace(target, content=new.content, content_digest=new.content_digest, pii=new.pii)
        base = replaced or target
        if mention:
            expected = replace(base, mention_count=target.mention_count + 1, last_seen_at=at)
        else:
            expected = replace(base, evidence_count=target.evidence_count + 1, last_seen_at=at)
        if replaced is not None:
            expected = replace(expected, lock_version=target.lock_version + 1, updated_at=at)
        answer = Appended(expected, True, replaced is not None, new.operation_id)
        settle(answer)
        index, unindex = _moved_terms(target, replaced) if replaced is not None else ((), ())
        stored = self.store.absorb_record(
            target,
            mention=mention,
            at=at,
            replaced=replaced,
            claim=None if mention else replace(new, public_id=target.public_id, lock_version=expected.lock_version),
            claim_until=None if mention else claim_until,
            dead_claim=dead,
            bands=new_bands if replaced is not None else (),
            index=index,
            unindex=unindex,
            budget=None,
            now=clock.now(),
        )
        return answer if stored is None else Appended(stored, True, replaced is not None, new.operation_id)

    # ---- one record ---------------------------------------------------------------------------------

    def show(self, presented: Acting, ws_id: str, record_id: str) -> TypedRecord:
        return self._opened(presented, ws_id, record_id, write=False)[1]

    def update(
        self,
        presented: PresentedToken | None,
        ws_id: str,
        record_id: str,
        expected: int,
        content: str | None,
        tags: tuple[str | None, tuple[str, ...]] | None,
    ) -> TypedRecord:
        caller, rec = self._opened(presented, ws_id, record_id, write=True)
        if rec.lock_version != expected:
            raise ApiError(
                "stale_object", f"The record is at lock_version {rec.lock_version}, not {expected}: read it again."
            )
        at = now_iso()
        after = replace(rec, lock_version=rec.lock_version + 1, updated_at=at)
        if content is not None and content != rec.content:
            pii, quarantine = scan(content)
            after = replace(
                after,
                content=content,
                content_digest=recordtext.content_digest(content),
                pii=pii,
                quarantine=quarantine,
            )
        if tags is not None:
            after = replace(after, facet=tags[0], labels=tags[1])
        if after.layer == "Workspace":
            after = replace(
                after,
                group=group_of(
                    ws_id,
                    after.type,
                    after.facet,
                    after.visibility,
                    f"{after.author.kind}:{after.author.public_id}",
                    after.user_id,
                ),
            )
        bands: tuple[str, ...] = ()
        indexed = after.layer == "Workspace" and not after.hidden and caller.workspace.dedup_enabled
        if indexed and (after.content != rec.content or after.group != rec.group):
            bands = recordtext.band_keys(recordtext.shingles(after.content))
        settle(after)
        index, unindex = _moved_terms(rec, after)
        self.store.replace_record(rec, after, bands, self.budgets.of(caller.principal), index=index, unindex=unindex)
        return after

    def delete(self, presented: PresentedToken | None, ws_id: str, record_id: str, expected: int) -> None:
        caller, rec = self._opened(presented, ws_id, record_id, write=True)
        if rec.lock_version != expected:
            raise ApiError(
                "stale_object", f"The record is at lock_version {rec.lock_version}, not {expected}: read it again."
            )
        settle(None)
        self.store.delete_record(rec, expected, self.budgets.of(caller.principal), terms=index_terms(rec))

    def review(self, presented: PresentedToken | None, ws_id: str, record_id: str, decision: str) -> TypedRecord | None:
        caller, rec = self._opened(presented, ws_id, record_id, write=True)
        access.reviews(caller.principal, caller.role, rec.author, "record")
        if rec.quarantine is None or rec.quarantine.status != "pending":
            raise ApiError("validation_failed", "That record is not waiting for review.")
        budget = self.budgets.of(caller.principal)
        if decision == "reject":
            settle(None)
            self.store.review_record(rec, None, budget, terms=index_terms(rec))
            return None
        q = rec.quarantine
        released = replace(rec, quarantine=Quarantine("released", q.rules, q.ruleset, caller.author(), now_iso()))
        settle(released)
        self.store.review_record(rec, released.quarantine, budget, terms=(PENDING,))
        return released

    # ---- consolidation ------------------------------------------------------------------------------

    def consolidate(
        self, presented: PresentedToken | None, ws_id: str, run_id: str, instructions: str | None
    ) -> Consolidation:
        """Turn a run's Session raw lines into Workspace records, rule-based: each line is split into
        clauses (speaker prefixes stripped), each clause appended with a type from `recordtext.classify`
        through the same duplicate check. Each line is taken by one consolidation only (a conditional
        claim on its run entry), so concurrent calls never consolidate a line twice."""
        caller, _ = self._caller(presented, ws_id, write=True)
        pending = [line for line in self.store.run_lines(ws_id, run_id) if not line.consolidated]
        batch, rest = pending[:MAX_CONSOLIDATED_LINES], pending[MAX_CONSOLIDATED_LINES:]
        refs = {line.record_id: Ref.record(ws_id, "Session", line.record_id) for line in batch}
        raws = self.store.get_many(list(refs.values())) if refs else {}
        operation = uuid7()
        created = merged = done = 0
        started = time.monotonic()
        with suspended():
            for line in batch:
                if time.monotonic() - started > CONSOLIDATION_SECONDS:
                    break
                done += 1
                raw = raws.get(refs[line.record_id])
                if raw is None or raw.hidden or not caller.sees(raw):
                    # Quarantined lines wait for review; another author's private lines are theirs to consolidate.
                    continue
                if not self.store.claim_run_line(
                    ws_id, run_id, line.record_id, operation, clock.now() + CONSOLIDATION_LEASE_SECONDS
                ):
                    continue
                for kind, clause in self.extractor.extract(raw.content, instructions):
                    spec = RecordSpec(
                        content=clause,
                        type=kind,
                        run_id=run_id,
                        source_kind="consolidation",
                        source_ref=raw.public_id,
                        visibility=raw.visibility,
                        user_id=raw.user_id,
                    )
                    out = self.append(presented, ws_id, spec)
                    created += 0 if out.merged else 1
                    merged += 1 if out.merged else 0
                self.store.finish_run_line(ws_id, run_id, line.record_id, operation)
        ignored = instructions is not None and not self.extractor.reads_instructions
        return Consolidation(created, merged, ignored, len(rest) + len(batch) - done, self.extractor.name)

    # ---- search -------------------------------------------------------------------------------------

    def search(self, presented: Acting, ws_id: str, q: SearchSpec) -> SearchPage:
        caller, _ = self._caller(presented, ws_id, write=False)
        offset = _read_cursor(q.cursor, q.fingerprint())
        if q.quarantine == "pending" and not access.is_curator(caller.role):
            return SearchPage([], None)
        terms = recordtext.query_terms(q.query or "")
        if q.query and not terms:
            # No word to rank by (punctuation only): nothing can score, so nothing is read.
            return SearchPage([], None)
        indexed = caller.workspace.records_index
        if terms and indexed >= recordtext.TERMS_SINCE:
            per_term = min(POSTINGS_PER_TERM, MAX_SEARCH_CANDIDATES // len(terms))
            rows, truncated = self.store.indexed_records(ws_id, q.layer, terms, per_term)
        elif not terms and q.quarantine == "pending" and indexed >= PENDING_SINCE:
            # The curator's listing of what waits for review: the pending postings, newest first.
            rows, truncated = self.store.indexed_records(ws_id, q.layer, [PENDING[0]], MAX_SEARCH_CANDIDATES)
        else:
            # A workspace made before the index it needs (until `agent-memory reindex-records`), or a search
            # with no words and no pending filter: every record of the layer.
            rows, truncated = self.store.workspace_records(ws_id, q.layer)
        now = clock.now()
        kept = [r for r in rows if self._selected(caller, r, q, now)]
        ranked: list[tuple[TypedRecord, float]]
        if q.quarantine == "pending" and not q.query:
            kept.sort(key=lambda r: r.public_id, reverse=True)
            ranked = [(r, 0.0) for r in kept]
        else:
            # Newest first, so that equal scores rank the newer record higher.
            kept.sort(key=lambda r: r.public_id, reverse=True)
            ranked = [
                (kept[i], round(score, 6))
                for i, score in recordtext.rank(q.query or "", [_searchable_text(r) for r in kept])
            ]
        page = ranked[offset : offset + q.limit]
        more = offset + q.limit < len(ranked)
        # The rows ranked are projections: the page is read whole, in one batch (a record deleted since
        # the query is left out).
        refs = {r.public_id: Ref.record(ws_id, r.layer, r.public_id) for r, _ in page}
        whole = self.store.get_many(list(refs.values())) if refs else {}
        results = [(whole[refs[r.public_id]], score) for r, score in page if whole.get(refs[r.public_id]) is not None]
        return SearchPage(results, _cursor(offset + q.limit, q.fingerprint()) if more else None, truncated)

    # ---- export -------------------------------------------------------------------------------------

    def export(self, presented: PresentedToken | None, ws_id: str, cursor: str | None) -> ExportPage:
        """A page of every record the caller reads by id, except quarantined ones (a curator's too: an
        export leaves the service, and a record waiting for review has not been let out yet), superseded
        and expired ones included, each masked (`masked`). Workspace layer first, then Session."""
        caller, _ = self._caller(presented, ws_id, write=False)
        shards = self.store.record_shards
        layer, shard, after = _read_export_cursor(cursor, ws_id, shards)
        walk = [(lay, n) for lay in EXPORT_LAYERS for n in range(shards)]
        at = walk.index((layer, shard))
        picked: list[TypedRecord] = []
        spent = read = 0
        while at < len(walk):
            layer, shard = walk[at]
            if read >= EXPORT_PAGE_RECORDS:
                return ExportPage(picked, _export_cursor(ws_id, layer, shard, after))
            rows, more = self.store.record_page(ws_id, layer, shard, after, EXPORT_PAGE_RECORDS - read)
            read += len(rows)
            for rec in rows:
                if caller.sees(rec) and not rec.hidden:
                    line = masked(rec)
                    weight = _export_weight(line)
                    if picked and spent + weight > EXPORT_PAGE_BYTES:
                        # `after` is the last id this page answered for: the next page starts with `rec`.
                        return ExportPage(picked, _export_cursor(ws_id, layer, shard, after))
                    picked.append(line)
                    spent += weight
                after = rec.public_id
            if not more:
                at, after = at + 1, None
        return ExportPage(picked, None)

    def _selected(self, caller: Caller, r: TypedRecord, q: SearchSpec, now: float) -> bool:
        if not caller.sees(r) or (q.for_model and r.hidden):
            return False
        if q.quarantine == "pending" and (r.quarantine is None or r.quarantine.status != "pending"):
            return False
        if q.type is not None and r.type != q.type:
            return False
        if q.facet is not None and r.facet != q.facet:
            return False
        if q.run_id is not None and r.run_id != q.run_id:
            return False
        if q.user_id is not None and r.user_id != q.user_id:
            return False
        if r.superseded_by is not None and not q.include_superseded:
            return False
        return q.include_expired or not _expired(r, now)


@dataclass(frozen=True, slots=True)
class Reindexed:
    """What a reindex did: records read, postings written, and postings taken back because their record
    changed or went while they were being written."""

    records: int
    postings: int
    withdrawn: int


def reindex(store: RecordsStore, ws_id: str, progress: Callable[[str], None] | None = None) -> Reindexed:
    """Write the search postings of every record of a workspace (both layers), then mark it indexed, so its
    searches stop reading every record. For workspaces made before the index; running it again is harmless.

    Safe beside live writes. Appends, edits and deletes put and remove a record's postings in their own
    commits, conditioned on the version they read. A page's postings are written first and the page is then
    read again (strongly): postings of a text a record no longer holds, or of a record gone, are removed.
    A change after that read removes them itself, since its commit works from the text this read saw."""
    if store.get_many([Ref.workspace(ws_id)])[Ref.workspace(ws_id)] is None:
        raise access.not_found("workspace")
    records = postings = withdrawn = 0
    for layer in EXPORT_LAYERS:
        for shard in range(store.record_shards):
            after: str | None = None
            while True:
                rows, more = store.record_page(ws_id, layer, shard, after, REINDEX_PAGE)
                written = [(r.public_id, index_terms(r)) for r in rows]
                store.write_postings(ws_id, layer, written)
                refs = {r.public_id: Ref.record(ws_id, layer, r.public_id) for r in rows}
                now = store.get_many(list(refs.values())) if refs else {}
                stale: list[tuple[str, tuple[tuple[str, int], ...]]] = []
                for rid, terms in written:
                    current = now.get(refs[rid])
                    kept = set(index_terms(current)) if current is not None else set()
                    gone = tuple(t for t in terms if t not in kept)
                    if gone:
                        stale.append((rid, gone))
                if stale:
                    store.write_postings(ws_id, layer, stale, remove=True)
                records += len(rows)
                postings += sum(len(t) for _, t in written)
                withdrawn += sum(len(t) for _, t in stale)
                if not more or not rows:
                    break
                after = rows[-1].public_id
            if progress is not None:
                progress(f"{layer} shard {shard}: {records} records so far")
    store.mark_records_indexed(ws_id, recordtext.INDEX_VERSION)
    return Reindexed(records, postings, withdrawn)


def _cursor(offset: int, fingerprint: str) -> str:
    raw = json.dumps({"o": offset, "f": fingerprint}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _read_cursor(cursor: str | None, fingerprint: str) -> int:
    if cursor is None:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset = data["o"]
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0 or data["f"] != fingerprint:
            raise ValueError
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError("parameter_invalid", "search.cursor is not a cursor this search gave.") from exc
    return offset


def masked(rec: TypedRecord) -> TypedRecord:
    """`rec` with personal data masked in every text field its writer chose: the content, and the short
    fields beside it that are as free (source_ref, user_id, run_id, the facet and labels), since an
    end user's id is as likely an e-mail address as anything. Fields the service sets stay as they are."""

    def opt(text: str | None) -> str | None:
        return None if text is None else mask(text)

    return replace(
        rec,
        content=mask(rec.content),
        source_ref=opt(rec.source_ref),
        user_id=opt(rec.user_id),
        run_id=opt(rec.run_id),
        facet=opt(rec.facet),
        labels=tuple(mask(label) for label in rec.labels),
    )


def _export_weight(rec: TypedRecord) -> int:
    """An upper estimate of a record's export line in bytes: its free text as JSON spells it (escapes can
    make it several times the text), plus a fixed allowance for the rest."""
    texts = [rec.content, rec.source_ref, rec.user_id, rec.run_id, rec.facet, rec.author.name, *rec.labels]
    return _EXPORT_LINE_OVERHEAD + sum(
        len(json.dumps(t, ensure_ascii=False).encode("utf-8", "surrogatepass")) for t in texts if t is not None
    )


def _workspace_tag(ws_id: str) -> str:
    return hashlib.sha256(ws_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _export_cursor(ws_id: str, layer: str, shard: int, after: str | None) -> str:
    raw = {"w": _workspace_tag(ws_id), "l": layer, "s": shard, "a": after}
    return base64.urlsafe_b64encode(json.dumps(raw, separators=(",", ":")).encode()).decode().rstrip("=")


def _read_export_cursor(cursor: str | None, ws_id: str, shards: int) -> tuple[str, int, str | None]:
    """(layer, shard, last id read) where a page starts. A cursor is the caller's to send back, so every
    part is checked: it must be this workspace's, name a layer and shard that exist, and an id."""
    if cursor is None:
        return EXPORT_LAYERS[0], 0, None
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        layer, shard, after = data["l"], data["s"], data["a"]
        if (
            data["w"] != _workspace_tag(ws_id)
            or layer not in EXPORT_LAYERS
            or not isinstance(shard, int)
            or isinstance(shard, bool)
            or not 0 <= shard < shards
            or not (after is None or is_uuid(after))
        ):
            raise ValueError
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError("parameter_invalid", "cursor is not one this workspace's record export answered.") from exc
    return layer, shard, after
