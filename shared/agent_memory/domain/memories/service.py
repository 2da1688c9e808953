"""Organization Memories: named, durable file stores an account owns and attaches to its agents.

A Memory's files are documents under their own anchor (`memory#<id>`), written, edited, versioned and
rolled back by the same verbs as every other document (memory.py, history.py) through the Memory's one
root; this module adds what belongs to the Memory as a whole: its creation (with files, from a Git
repository, or promoted from a version elsewhere), its settings and access, archive and deletion, leases,
the agents' attachments and tenant defaults, and the map of what reaches what.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from agent_memory.api.errors import ApiError
from agent_memory.core import access, clock, idempotency
from agent_memory.core.bindings import Binding
from agent_memory.core.budget import Budgets
from agent_memory.core.context import Context, Source
from agent_memory.core.ids import PresentedToken, now_iso, sha256_hex, uuid7
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import (
    MAX_MEMORY_FILE_BYTES,
    Agent,
    Attachment,
    AttachMode,
    Author,
    Document,
    GitOrigin,
    Lease,
    MemoryAccess,
    MemoryDefault,
    MemoryStats,
    OrgMemory,
    Principal,
    PromotedFrom,
    Version,
    VersionCheck,
    stats_after,
)
from agent_memory.core.paths import FILES_ROOT, MemoryPath, parse_file_path, prefix_matches
from agent_memory.core.ports import MemoriesStore, Ref
from agent_memory.core.resolver import MemoryDoor, Resolver
from agent_memory.domain.memory.history import HistoryService, version_text
from agent_memory.domain.memory.service import MemoryService, check_content

if TYPE_CHECKING:
    from agent_memory.domain.memories.gitsource import GitSnapshot

MEMORY_ID_RE = re.compile(r"^mem_[0-9a-f]{32}\Z")
LIST_LIMIT_MAX = 100
FILES_LIMIT_MAX = 1000
# A listing walks at most this many index entries for one page (invisible Memories are skipped).
LIST_SCAN_BOUND = 1000
LEASE_SECONDS_MAX = 60


def new_memory_id() -> str:
    return f"mem_{secrets.token_hex(16)}"


def check_memory_id(value: str) -> str:
    if not MEMORY_ID_RE.match(value):
        raise access.not_found("Memory")
    return value


# ---- what the verbs answer ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Referrer:
    agent_public_id: str
    name: str
    via: Literal["attachment", "default"]
    mode: AttachMode
    read_first: bool


@dataclass(frozen=True, slots=True)
class MemoryView:
    memory: OrgMemory
    stats: MemoryStats
    referenced_by: list[Referrer] | None = None


@dataclass(frozen=True, slots=True)
class MemoryPage:
    memories: list[MemoryView]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class FilePage:
    files: list[Document]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class Effective:
    """One Memory an agent has, and how."""

    memory_id: str
    name: str
    mode: AttachMode
    read_first: bool
    via: Literal["attachment", "default"]
    source: str
    archived: bool
    description: str = ""


@dataclass(frozen=True, slots=True)
class SyncResult:
    view: MemoryView
    commit: str
    changed: list[str]
    removed: list[str]


@dataclass(frozen=True, slots=True)
class MemorySpec:
    """A new Memory as a request describes it (edges/requests/memories.py parses it)."""

    name: str
    description: str
    files: list[tuple[MemoryPath, str]]
    git: tuple[str, str | None, str | None] | None
    default: MemoryDefault | None
    access: MemoryAccess | None


@dataclass(frozen=True, slots=True)
class MemoryPatch:
    """The fields a PATCH sent (None: not sent; `access`/`default` may be sent as null)."""

    description: str | None = None
    default_given: bool = False
    default: MemoryDefault | None = None
    access_given: bool = False
    access: MemoryAccess | None = None


@dataclass(frozen=True, slots=True)
class AgentPatch:
    memories: list[Attachment] | None = None  # None: not sent (the list is left as it is)
    deployment_given: bool = False
    deployment: str | None = None


def _stats_in(loaded: dict[Ref, Any], memory_id: str) -> MemoryStats:
    """A Memory's counter row as a door's batch read it (none yet: an empty Memory's)."""
    found: MemoryStats | None = loaded.get(Ref.memory_stats(memory_id))
    return found or MemoryStats(0, 0, None, None)


def _files_source(memory: OrgMemory) -> Source:
    """The root a Memory's own changes go through (creation, a sync): writable whatever its source."""
    return Source(Binding(FILES_ROOT, "memory", "read_write"), memory.anchor, True)


class MemoriesService:
    def __init__(
        self,
        store: MemoriesStore,
        resolver: Resolver,
        memory: MemoryService,
        history: HistoryService,
        budgets: Budgets | None = None,
        *,
        git_file_roots: tuple[str, ...] = (),
    ) -> None:
        self.store = store
        self.resolver = resolver
        self.memory = memory
        self.history = history
        self.budgets = budgets or Budgets()
        self.git_file_roots = git_file_roots

    def _spend(self, principal: Principal) -> None:
        budget = self.budgets.of(principal)
        if budget is not None:
            self.store.spend(budget)

    # ---- the Memory as a whole ------------------------------------------------------------------------

    def create(self, presented: PresentedToken | None, spec: MemorySpec) -> MemoryView:
        principal = self.resolver.human(presented)
        # The request model has checked the name, the description, the default and the files' shape.
        self._check_panel(principal, spec.access)
        for _, content in spec.files:
            check_content(content, MAX_MEMORY_FILE_BYTES)
        snapshot = None
        if spec.git is not None:
            from agent_memory.domain.memories.gitsource import read_snapshot

            url, ref, path = spec.git
            snapshot = read_snapshot(url, ref, path, file_roots=self.git_file_roots)
        author = Author(principal.kind, principal.public_id, principal.name)
        memory = OrgMemory(
            memory_id=new_memory_id(),
            account_id=principal.account_id,
            name=spec.name,
            description=spec.description,
            source="git" if snapshot is not None else "native",
            created_by=author,
            created_at=now_iso(),
            git=None if snapshot is None else GitOrigin(snapshot.url, snapshot.ref, snapshot.path, None),
            default=spec.default,
            access=spec.access,
        )
        ctx = self._own_context(principal, memory)
        # The meters go out with the first files' uploads (one step, not two); a refusal stops the request
        # before its commit, leaving the uploaded objects unreferenced, for the sweeper.
        with self.store.spending(self.budgets.of(principal)):
            files = [self._first_version(ctx, mp, content) for mp, content in spec.files]
        stats = MemoryStats(
            len(files), sum(d.bytesize for d, _ in files), author if files else None, now_iso() if files else None
        )
        if snapshot is None:
            view = MemoryView(memory, stats)
            idempotency.settle(view)
            self.store.create_memory(memory, files, stats)
            return view
        # A Git import may be larger than one transaction: the Memory is created empty, then imported in
        # groups, and only a complete import records its commit (a sync finishes an interrupted one).
        self.store.create_memory(memory, [], stats)
        # Nothing to list: the Memory was created empty a moment ago, and an import's new files are written
        # on the condition that no such file exists.
        return self._import(principal, memory, snapshot, [], stats, lambda r: r.view).view

    def _own_context(self, principal: Principal, memory: OrgMemory, acting: Author | None = None) -> Context:
        return Context(self.store, principal, "memory", {FILES_ROOT: _files_source(memory)}, acting_as=acting)

    def _first_version(self, ctx: Context, mp: MemoryPath, content: str) -> tuple[Document, Version]:
        src = ctx.sources[FILES_ROOT]
        doc = self.memory.new_version(ctx, src, mp, check_content(content, MAX_MEMORY_FILE_BYTES), uuid7(), 0, None)
        return doc, Version.of(doc, "write", clock.now())

    def _check_panel(self, principal: Principal, panel: MemoryAccess | None) -> None:
        """Every Human and workspace an Access panel names must exist in the caller's account."""
        if panel is None:
            return
        refs = [Ref.human(h) for h in panel.humans] + [Ref.workspace(w) for w in panel.workspaces]
        got = self.store.get_many(refs)
        for ref in refs:
            row = got[ref]
            if row is None or row.account_id != principal.account_id:
                what = "humans" if ref.kind == "human" else "workspaces"
                raise ApiError("validation_failed", f"memory.access.{what}: no {ref.kind} {ref.a} in this account.")

    def view(self, door: MemoryDoor) -> MemoryView:
        stats = _stats_in(door.context.loaded, door.memory.memory_id)
        return MemoryView(door.memory, stats)

    def listing(self, presented: PresentedToken | None, limit: int, cursor: str | None) -> MemoryPage:
        principal = self.resolver.principal(presented)
        ctx = Context(self.store, principal, "memory", {})
        out: list[MemoryView] = []
        after, scanned = cursor, 0
        while len(out) < limit and scanned < LIST_SCAN_BOUND:
            ids, more = self.store.memory_ids(principal.account_id, after, min(LIST_LIMIT_MAX, limit - len(out)))
            if not ids:
                return MemoryPage(out, None)
            scanned += len(ids)
            ctx.fetch([r for mid in ids for r in (Ref.memory(mid), Ref.memory_stats(mid))])
            rows = [ctx.loaded.get(Ref.memory(mid)) for mid in ids]
            for mem in rows:
                if mem is None or mem.account_id != principal.account_id:
                    continue
                if self.resolver.memory_reach(ctx, mem) is not None:
                    out.append(MemoryView(mem, _stats_in(ctx.loaded, mem.memory_id)))
            after = ids[-1]
            if not more:
                return MemoryPage(out, None)
        return MemoryPage(out, after)

    def show(self, presented: PresentedToken | None, memory_id: str) -> MemoryView:
        door = self.resolver.memory(presented, check_memory_id(memory_id), stats=True)
        return replace(self.view(door), referenced_by=self._referrers(door.context, door.memory))

    def _referrers(self, ctx: Context, memory: OrgMemory) -> list[Referrer]:
        out = [
            Referrer(r.agent_id, r.agent_name, "attachment", r.mode, r.read_first)
            for r in self.store.memory_references(memory.account_id, memory.memory_id)
        ]
        d = memory.default
        if d is not None:
            attached = {r.agent_public_id for r in out}
            for agent_id, name, deployment in self.store.account_agents(memory.account_id):
                if agent_id in attached:
                    continue
                if d.reach == "account" or (deployment is not None and deployment == d.deployment):
                    out.append(Referrer(agent_id, name, "default", d.mode, d.read_first))
        return out

    def patch(self, presented: PresentedToken | None, memory_id: str, change: MemoryPatch) -> MemoryView:
        door = self.resolver.memory(presented, check_memory_id(memory_id), stats=True)
        ctx, mem = door.context, door.memory
        access.may_manage_memory(ctx.principal, door.reach)
        after = mem
        if change.description is not None:
            after = replace(after, description=change.description)
        if change.default_given:
            after = replace(after, default=change.default)
        if change.access_given:
            ctx.fetch([Ref.account(mem.account_id)])
            access.may_change_access(ctx.principal, mem, ctx.loaded)
            self._check_panel(ctx.principal, change.access)
            after = replace(after, access=change.access)
        return self._store_change(ctx, door, after)

    def archive(self, presented: PresentedToken | None, memory_id: str) -> MemoryView:
        door = self.resolver.memory(presented, check_memory_id(memory_id), stats=True)
        access.may_manage_memory(door.context.principal, door.reach)
        return self._store_change(door.context, door, replace(door.memory, archived=True))

    def _store_change(self, ctx: Context, door: MemoryDoor, after: OrgMemory) -> MemoryView:
        after = replace(after, revision=door.memory.revision + 1)
        self._spend(ctx.principal)
        view = MemoryView(after, self.view(door).stats)
        idempotency.settle(view)
        self.store.update_memory(door.memory, after)
        return view

    def delete(self, presented: PresentedToken | None, memory_id: str) -> None:
        """Remove the Memory and detach it from every agent in the same step; its files, versions and
        bytes go with it (the sweeper deletes the rows and objects of a deleted Memory's anchor).

        A Memory attached to more agents than one transaction holds is detached in steps; the first marks
        it deleted, so from then on it is gone for every reader."""
        ref = Ref.memory_any(check_memory_id(memory_id))
        principal, got = self.resolver.first_round(presented, [ref])
        # A deletion interrupted half way (a Memory attached to many agents) is gone for every reader but
        # this one, which finishes it.
        mem = access.memory_in_account(principal, got[ref])
        ctx = Context(self.store, principal, "memory", {}, loaded=got)
        reach = self.resolver.memory_reach(ctx, mem)
        if reach is None:
            raise access.not_found("Memory")
        access.may_manage_memory(principal, reach)
        self._spend(principal)
        idempotency.settle(None)
        for _ in range(MAX_DETACH_STEPS):
            refs = self.store.memory_references(mem.account_id, mem.memory_id)
            if len(refs) == mem.attachment_count:
                final = len(refs) <= DETACH_PER_STEP
                try:
                    self.store.delete_memory(mem, refs[:DETACH_PER_STEP], final=final)
                except ApiError as exc:
                    if exc.code != "stale_object":
                        raise
                else:
                    if final:
                        return
            # An attachment landed or left meanwhile, or a step of this deletion landed: read the row again.
            fresh = self.store.get_many([ref])[ref]
            if fresh is None:
                return  # deleted meanwhile, by this request's earlier send or another
            mem = fresh
        raise ApiError("stale_object", "The Memory's attachments kept changing while it was deleted: try again.")

    # ---- files --------------------------------------------------------------------------------------------

    def files(
        self,
        presented: PresentedToken | None,
        memory_id: str,
        prefix: MemoryPath | None,
        limit: int,
        cursor: str | None,
    ) -> FilePage:
        door = self.resolver.memory(presented, check_memory_id(memory_id))
        folder = "" if prefix is None else prefix.rest
        docs = [d for d in self.store.list_documents(door.memory.anchor) if prefix_matches(folder, d.rest)]
        if cursor is not None:
            docs = [d for d in docs if d.rest > cursor]
        page = docs[:limit]
        return FilePage(page, page[-1].rest if len(docs) > limit else None)

    def lease(self, presented: PresentedToken | None, memory_id: str, mp: MemoryPath, seconds: int) -> Lease:
        door = self.resolver.memory(presented, check_memory_id(memory_id))
        ctx = door.context
        # A lease is for a writer: the same checks a write of the file makes.
        access.may_change(ctx, mp)
        holder = ctx.author()
        # To the millisecond the lease row keeps, so the answer and a refusal name the same instant.
        lease = Lease(door.memory.memory_id, mp.rest, holder, round(clock.now() + seconds, 3))
        idempotency.settle(lease)
        self.store.put_lease(lease, door.memory.anchor.key)
        return lease

    # ---- promote --------------------------------------------------------------------------------------------

    def promote(
        self,
        presented: PresentedToken | None,
        source_ctx: Context,
        source: MemoryPath,
        lock_version: int,
        origin_memory_id: str | None,
        name: str,
        description: str,
        file_path: MemoryPath | None,
        default: MemoryDefault | None,
    ) -> MemoryView:
        """Copy one version the caller reads into a brand-new Memory: the new file points at the same
        immutable object (no bytes move), and the Memory and the file's first version name where it came
        from. The source is untouched (its record is only marked as shared, so a redaction there leaves
        the bytes to the sweeper)."""
        principal = source_ctx.principal
        access.require_human(principal)
        record = self.history.version_of(source_ctx, source, lock_version)
        if record.pii:
            raise ApiError(
                "memory_pii_blocked",
                f"Version {lock_version} of {source.logical!r} contains personal data ({', '.join(record.pii)}), "
                "so it cannot be promoted into a Memory others read: rewrite or redact it first.",
            )
        # No bytes move, but they are checked once (one GET unless cached): bytes that fail the hash their
        # version recorded are never handed to a Memory others read (memory_content_corrupt).
        version_text(source_ctx, source.logical, record)
        target = file_path or parse_file_path(source.rest.rsplit("/", 1)[-1])
        author = Author(principal.kind, principal.public_id, principal.name)
        src = source_ctx.source(source)
        origin = PromotedFrom(
            "" if origin_memory_id else src.anchor_public_id or "",
            source.logical,
            record.public_id,
            lock_version,
            origin_memory_id,
            author,
            now_iso(),
        )
        memory = OrgMemory(
            memory_id=new_memory_id(),
            account_id=principal.account_id,
            name=name,
            description=description,
            source="native",
            created_by=author,
            created_at=now_iso(),
            default=default,
            promoted_from=origin,
        )
        doc = Document(
            memory.anchor,
            target.rest,
            uuid7(),
            0,
            record.bytesize,
            record.sha256,
            None,
            now_iso(),
            record.content_key or "",
            author,
            record.pii,
            record.quarantine,
        )
        first = Version.of(doc, "promote", clock.now(), promoted_from=origin)
        stats = MemoryStats(1, doc.bytesize, author, doc.written_at)
        self._spend(principal)
        view = MemoryView(memory, stats)
        idempotency.settle(view)
        self.store.create_memory(
            memory, [(doc, first)], stats, VersionCheck(record.anchor, record.rest, record.public_id, lock_version)
        )
        return view

    # ---- Git --------------------------------------------------------------------------------------------------

    def sync(self, presented: PresentedToken | None, memory_id: str) -> SyncResult:
        door = self.resolver.memory(presented, check_memory_id(memory_id), stats=True)
        access.may_manage_memory(door.context.principal, door.reach)
        mem = door.memory
        if mem.git is None:
            raise ApiError("validation_failed", "This Memory is not synced from Git: it has nothing to sync.")
        # The meters are in flight while the Git client loads, and settled before the fetch: a caller over
        # its budget is refused without making this function fetch a repository for it.
        with self.store.spending(self.budgets.of(door.context.principal)):
            from agent_memory.domain.memories.gitsource import read_snapshot
        # The Memory's files are listed while the repository is fetched: neither needs the other, and over
        # https the fetch is the longer wait. `with` awaits the listing on every path, a failed fetch too.
        with ThreadPoolExecutor(max_workers=1) as side:
            listing = side.submit(self.store.list_documents, mem.anchor)
            snapshot = read_snapshot(mem.git.url, mem.git.ref, mem.git.path, file_roots=self.git_file_roots)
            current = listing.result()
        stats = _stats_in(door.context.loaded, mem.memory_id)
        return self._import(door.context.principal, mem, snapshot, current, stats, lambda r: r)

    def _import(
        self,
        principal: Principal,
        mem: OrgMemory,
        snapshot: GitSnapshot,
        listed: list[Document],
        stats: MemoryStats,
        answer: Callable[[SyncResult], object],
    ) -> SyncResult:
        """Make the Memory's files the snapshot's: changed files become new versions, removed files are
        deleted, each authored by the sync and its commit. `listed` and `stats` are the Memory's files and
        counter row as the caller read them; the changes are conditioned on those rows, so two syncs racing
        cannot interleave their versions (the later one is refused stale_object)."""
        author = Author("sync", "", "git", commit=snapshot.commit)
        ctx = self._own_context(principal, mem, author)
        src = ctx.sources[FILES_ROOT]
        current = {d.rest: d for d in listed}
        # The listing is what the changes are conditioned on: the commit need not read any row again.
        ctx.loaded.update({Ref.document(mem.anchor, rest): d for rest, d in current.items()})
        texts: dict[str, str] = {}
        for path, data in snapshot.files.items():
            try:
                mp = parse_file_path(path)
            except ApiError as exc:
                raise ApiError(
                    "memory_source_unavailable", f"The repository holds {path[:200]!r}, which is not a valid file path."
                ) from exc
            try:
                texts[mp.rest] = data.decode("utf-8")
            except UnicodeDecodeError:
                continue  # a binary file is not a document: it is left out of the Memory
        todo: list[tuple[MemoryPath, bytes, Document | None]] = []
        for rest, text in sorted(texts.items()):
            old = current.get(rest)
            data = text.encode("utf-8")
            if old is None or old.sha256 != sha256_hex(data):
                todo.append((MemoryPath(FILES_ROOT, rest, plain=True), data, old))

        def stored(item: tuple[MemoryPath, bytes, Document | None]) -> Document:
            mp, data, old = item
            pid, number = (uuid7(), 0) if old is None else (old.public_id, old.lock_version + 1)
            return self.memory.new_version(ctx, src, mp, data, pid, number, None)

        # The new versions' objects are stored in parallel: an import of hundreds of files is bound by S3's
        # round trips, not by this function's CPU.
        with ThreadPoolExecutor(max_workers=IMPORT_WORKERS) as workers:
            docs = list(workers.map(stored, todo))
        changes = [
            self.memory.change(
                ctx, src, mp, None if old is None else (old.public_id, old.lock_version), doc, None, "write"
            )
            for (mp, _, old), doc in zip(todo, docs, strict=True)
        ]
        changed = [mp.rest for mp, _, _ in todo]
        removed = sorted(set(current) - set(texts))
        for rest in removed:
            old = current[rest]
            mp = MemoryPath(FILES_ROOT, rest, plain=True)
            changes.append(self.memory.change(ctx, src, mp, (old.public_id, old.lock_version), None, None))
        assert mem.git is not None
        after = replace(mem, git=replace(mem.git, commit=snapshot.commit), revision=mem.revision + 1)
        # The counter row the commit leaves, known before it is sent: a synced Memory's files change only by
        # a sync, and the commit is conditioned on the Memory's revision, so no other change lands between.
        view = MemoryView(after, stats_after(stats, changes))
        result = SyncResult(view, snapshot.commit, changed, removed)
        # The answer a keyed request records: the Memory for a creation, the sync's report for a sync.
        idempotency.settle(answer(result))
        self.store.commit_import(changes, mem, after)
        return result

    # ---- agents -------------------------------------------------------------------------------------------

    def agent(self, presented: PresentedToken | None, agent_id: str) -> Agent:
        """An agent as the caller may see it: its attachments to Memories the caller does not reach are left
        out, as `GET /memories/{id}` would answer 404 for them."""
        principal, got = self.resolver.first_round(presented, [Ref.agent(agent_id)])
        agent = access.may_see_agent(principal, got[Ref.agent(agent_id)])
        return self._as_seen(principal, agent)

    def update_agent(self, presented: PresentedToken | None, agent_id: str, change: AgentPatch) -> Agent:
        principal, got = self.resolver.first_round(presented, [Ref.agent(agent_id)])
        agent = access.may_see_agent(principal, got[Ref.agent(agent_id)])
        access.may_attach(principal, agent)
        deployment = agent.deployment
        if change.deployment_given:
            deployment = change.deployment
        attached = agent.memories
        shown: tuple[Attachment, ...] | None = None
        if change.memories is not None:
            wanted = self._checked_attachments(principal, agent, change.memories)
            # What the caller cannot see it cannot detach either: a replaced list keeps the attachments to
            # Memories hidden from the caller (someone who reaches them set them, and may remove them).
            visible = self._reachable(principal, self._attached_rows(agent))
            named = {a.memory_id for a in wanted}
            kept = [a for a in agent.memories if a.memory_id not in visible and a.memory_id not in named]
            attached = tuple(wanted + kept)
            shown = tuple(wanted)  # every one checked reachable just now: the answer needs no other read
        before = {a.memory_id for a in agent.memories}
        after_ids = {a.memory_id for a in attached}
        added = [a.memory_id for a in attached if a.memory_id not in before]
        removed = [m for m in (a.memory_id for a in agent.memories) if m not in after_ids]
        updated = replace(
            agent, memories=attached, deployment=deployment, memories_revision=agent.memories_revision + 1
        )
        self._spend(principal)
        answer = self._as_seen(principal, updated) if shown is None else replace(updated, memories=shown)
        idempotency.settle(answer)
        self.store.replace_attachments(agent, attached, added, removed, deployment)
        return answer

    def _attached_rows(self, agent: Agent) -> list[OrgMemory]:
        rows = self.store.get_many([Ref.memory(a.memory_id) for a in agent.memories])
        return [m for m in rows.values() if m is not None]

    def _reachable(self, principal: Principal, memories: list[OrgMemory]) -> set[str]:
        """The ids of `memories` the caller reaches, by the rule `GET /memories/{id}` answers with."""
        ctx = Context(self.store, principal, "memory", {})
        return {
            m.memory_id
            for m in memories
            if m.account_id == principal.account_id and self.resolver.memory_reach(ctx, m) is not None
        }

    def _as_seen(self, principal: Principal, agent: Agent) -> Agent:
        """The agent with only the attachments the caller may know of."""
        if not agent.memories:
            return agent
        seen = self._reachable(principal, self._attached_rows(agent))
        return replace(agent, memories=tuple(a for a in agent.memories if a.memory_id in seen))

    def _checked_attachments(self, principal: Principal, agent: Agent, wanted: list[Attachment]) -> list[Attachment]:
        """The list the caller sends, each Memory one the caller already reaches, as far as it reaches it
        (`access.may_grant`): a person by their own access, a program setting its own list by its own
        attachments and defaults (so it grants itself nothing)."""
        ids = [a.memory_id for a in wanted]
        ctx = Context(self.store, principal, "memory", {})
        if principal.kind == "agent":
            # The agent's row as it stands before this change: its reach is what it already has.
            ctx.loaded[Ref.agent(agent.public_id)] = agent
        ctx.fetch([Ref.memory(m) for m in ids])
        for index, a in enumerate(wanted):
            where = f"agent.memories[{index}]"
            mem: OrgMemory | None = ctx.loaded.get(Ref.memory(a.memory_id))
            reach = None
            if mem is not None and mem.account_id == principal.account_id:
                reach = self.resolver.memory_reach(ctx, mem)
            access.may_grant(principal, reach, a.mode, where, a.memory_id, mem.name if mem is not None else "")
            if mem is None:  # refused by may_grant already (no reach); said again for the type checker
                continue
            already = any(b.memory_id == a.memory_id for b in agent.memories)
            if mem.archived and not already:
                raise ApiError(
                    "validation_failed",
                    f"{where}: Memory {mem.name!r} is archived: it cannot be newly attached.",
                )
        return wanted

    def effective(self, presented: PresentedToken | None, agent_id: str) -> list[Effective]:
        """The agent's Memories that the caller itself reaches (the others are not the caller's to know of)."""
        principal, got = self.resolver.first_round(presented, [Ref.agent(agent_id)])
        agent = access.may_see_agent(principal, got[Ref.agent(agent_id)])
        pairs = self._effective_pairs(agent)
        seen = self._reachable(principal, [m for m, _ in pairs])
        return [e for m, e in pairs if m.memory_id in seen]

    def effective_of(self, agent: Agent) -> list[Effective]:
        """The Memories an agent has: its attachments, then the tenant defaults that reach it and that no
        attachment overrides. A git-synced Memory is read-only however it is attached."""
        return [e for _, e in self._effective_pairs(agent)]

    def _effective_pairs(self, agent: Agent) -> list[tuple[OrgMemory, Effective]]:
        defaults = self.store.memory_defaults(agent.account_id)
        ids = [a.memory_id for a in agent.memories] + [mid for mid, _, _ in defaults]
        rows = self.store.get_many([Ref.memory(m) for m in ids])
        out: list[tuple[OrgMemory, Effective]] = []
        for a in agent.memories:
            mem = rows.get(Ref.memory(a.memory_id))
            if mem is not None:
                out.append((mem, _effective(mem, a.mode, a.read_first, "attachment")))
        attached = {a.memory_id for a in agent.memories}
        for mid, _, d in defaults:
            mem = rows.get(Ref.memory(mid))
            if mid in attached or mem is None or not d.reaches(agent):
                continue
            out.append((mem, _effective(mem, d.mode, d.read_first, "default")))
        return out

    # ---- the map --------------------------------------------------------------------------------------------

    def graph(self, presented: PresentedToken | None) -> dict[str, Any]:
        """Every Memory the caller sees, what it reaches (agents by attachment, all agents or a deployment
        by default), where promoted ones came from, and the orphans nothing reaches."""
        principal = self.resolver.human(presented)
        ctx = Context(self.store, principal, "memory", {})
        memories: list[OrgMemory] = []
        after = None
        while len(memories) < MAP_MEMORIES_MAX:
            ids, more = self.store.memory_ids(principal.account_id, after, LIST_LIMIT_MAX)
            ctx.fetch([Ref.memory(m) for m in ids])
            for mid in ids:
                mem = ctx.loaded.get(Ref.memory(mid))
                if mem is not None and self.resolver.memory_reach(ctx, mem) is not None:
                    memories.append(mem)
            if not more or not ids:
                break
            after = ids[-1]
        visible = {m.memory_id for m in memories}
        nodes: list[dict[str, Any]] = [{"id": m.memory_id, "kind": "memory", "name": m.name} for m in memories]
        edges: list[dict[str, Any]] = []
        agents: dict[str, str] = {}
        reached: set[str] = set()
        for r in self.store.memory_references(principal.account_id):
            if r.memory_id not in visible:
                continue
            agents.setdefault(r.agent_id, r.agent_name)
            reached.add(r.memory_id)
            edges.append(
                {
                    "from": r.memory_id,
                    "to": r.agent_id,
                    "kind": "attachment",
                    "mode": r.mode,
                    "read_first": r.read_first,
                }
            )
        targets: dict[str, str] = {}
        for m in memories:
            d = m.default
            if d is None:
                continue
            target = "all_agents" if d.reach == "account" else f"deployment:{d.deployment}"
            targets[target] = "All agents" if d.reach == "account" else str(d.deployment)
            reached.add(m.memory_id)
            edges.append(
                {"from": m.memory_id, "to": target, "kind": "default", "mode": d.mode, "read_first": d.read_first}
            )
        # A deployment default reaches agents no attachment names: each is drawn, joined to its deployment's
        # node by a `member` edge, so an agent that only a default reaches is on the map too.
        deployments = {t.removeprefix("deployment:") for t in targets if t != "all_agents"}
        if deployments:
            for agent_id, name, deployment in self.store.account_agents(principal.account_id):
                if deployment in deployments:
                    agents.setdefault(agent_id, name)
                    edges.append({"from": f"deployment:{deployment}", "to": agent_id, "kind": "member"})
        for m in memories:
            p = m.promoted_from
            if p is not None and p.memory_id is not None and p.memory_id in visible:
                edges.append({"from": p.memory_id, "to": m.memory_id, "kind": "provenance"})
        # A Memory an unexpired session mounts is no orphan either (the execution's mounts are frozen, so it
        # may be one no attachment or default reaches any more).
        mounted = self.store.mounted_memories(principal.account_id, clock.now())
        nodes += [{"id": aid, "kind": "agent", "name": name} for aid, name in sorted(agents.items())]
        nodes += [
            {"id": t, "kind": "all_agents" if t == "all_agents" else "deployment", "name": n}
            for t, n in sorted(targets.items())
        ]
        orphans = [m.memory_id for m in memories if m.memory_id not in reached and m.memory_id not in mounted]
        return {"nodes": nodes, "edges": edges, "orphans": orphans}


MAP_MEMORIES_MAX = 1000
IMPORT_WORKERS = 8
# Agents one deletion step detaches (two items each, beside the Memory's own five).
DETACH_PER_STEP = 40
MAX_DETACH_STEPS = 64


def _effective(mem: OrgMemory, mode: AttachMode, read_first: bool, via: Literal["attachment", "default"]) -> Effective:
    effective_mode: AttachMode = "readonly" if mem.source == "git" else mode
    return Effective(
        mem.memory_id, mem.name, effective_mode, read_first, via, mem.source, mem.archived, mem.description
    )
