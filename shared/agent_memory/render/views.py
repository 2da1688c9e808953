"""Responses: each function turns domain values into the JSON a route answers. Nothing else builds it.

Views read domain rows and never the stored items, so changing what a response shows can never change
what is persisted (an execution's stored bindings have their own mapping in the store).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agent_memory.core import clock

# Views read their arguments' attributes only: the types are for the checker, so a route that renders
# no block or skill never imports block.py, skills.py or context.py for its views.
if TYPE_CHECKING:
    from agent_memory.core.context import Context
    from agent_memory.core.model import (
        Account,
        Agent,
        Author,
        Conversation,
        Document,
        Execution,
        FrozenBinding,
        GrepResult,
        Human,
        Lease,
        Located,
        Member,
        MergedFrom,
        Mount,
        PromotedFrom,
        Quarantine,
        ShownVersion,
        Speaker,
        StoreEntry,
        ToolResult,
        TypedRecord,
        Version,
        VersionPage,
        Workspace,
    )
    from agent_memory.domain.memories.service import Effective, FilePage, MemoryPage, MemoryView, SyncResult
    from agent_memory.domain.memory.block import Block, Entry
    from agent_memory.domain.memory.skills import Skill
    from agent_memory.domain.records.service import Appended, Consolidation, ExportPage, SearchPage

Json = dict[str, Any]


def author(a: Author) -> Json:
    if a.kind == "sync":
        return {"kind": "sync", "name": a.name, "commit": a.commit}
    out: Json = {"kind": a.kind, "public_id": a.public_id, "name": a.name}
    if a.execution_public_id:
        out["execution_public_id"] = a.execution_public_id
    return out


def quarantine(q: Quarantine | None) -> Json | None:
    if q is None:
        return None
    out: Json = {"status": q.status, "rules": list(q.rules), "ruleset": q.ruleset}
    if q.reviewed_by is not None:
        out["reviewed_by"] = author(q.reviewed_by)
        out["reviewed_at"] = q.reviewed_at
    return out


def document(loc: Located) -> Json:
    doc = loc.document
    out: Json = {
        "path": loc.path,
        "public_id": doc.public_id,
        "lock_version": doc.lock_version,
        "bytesize": doc.bytesize,
        "description": doc.description,
        "written_at": doc.written_at,
        "written_by": author(doc.author),
        "content_sha256": doc.sha256,
        "pii": list(doc.pii),
        "quarantine": quarantine(doc.quarantine),
    }
    if loc.content is not None:
        out["content"] = loc.content
    return out


def version(v: Version, path: str) -> Json:
    """One version record (no content: `shown_version` adds it)."""
    p = v.promoted_from
    return {
        "path": path,
        "public_id": v.public_id,
        "lock_version": v.lock_version,
        "bytesize": v.bytesize,
        "content_sha256": v.sha256,
        "description": v.description,
        "written_at": v.written_at,
        "author": author(v.author),
        "operation": v.operation,
        "overwrote_concurrent_edit": v.overwrote_concurrent_edit,
        "rolled_back_from": v.rolled_back_from,
        "renamed_from": v.renamed_from,
        "promoted_from": None if p is None else promoted_from(p),
        "promoted_by": author(v.author) if v.operation == "promote" else None,
        "forked_from": None if v.forked_from is None else {"conversation_public_id": v.forked_from},
        "merged_from": None if v.merged_from is None else merged_from(v.merged_from),
        "redacted": v.redacted,
        "redacted_at": v.redacted_at,
        "redacted_by": None if v.redacted_by is None else author(v.redacted_by),
        "pii": list(v.pii),
        "quarantine": quarantine(v.quarantine),
    }


def merged_from(m: MergedFrom) -> Json:
    """The fork's version a merge landed."""
    return {
        "conversation_public_id": m.conversation_public_id,
        "public_id": m.public_id,
        "lock_version": m.lock_version,
    }


def promoted_from(p: PromotedFrom) -> Json:
    """Where a promoted version came from: a document of an anchor, or a file of a Memory."""
    out: Json = {"memory_id": p.memory_id} if p.memory_id else {"anchor_public_id": p.anchor_public_id}
    out |= {"path": p.path, "public_id": p.public_id, "lock_version": p.lock_version}
    if p.promoted_by is not None:
        out |= {"promoted_by": author(p.promoted_by), "promoted_at": p.promoted_at}
    return out


def version_page(page: VersionPage) -> Json:
    return {"versions": [version(v, page.path) for v in page.versions], "next_cursor": page.next_cursor}


def shown_version(shown: ShownVersion) -> Json:
    return {**version(shown.version, shown.path), "content": shown.content}


def listing(rows: list[Located]) -> list[Json]:
    return [document(r) for r in rows]


def grep(result: GrepResult) -> Json:
    out: Json = {
        "matches": [{"path": m.path, "line_number": m.line_number, "text": m.text} for m in result.matches],
        "truncated": result.truncated,
        "truncated_reason": result.truncated_reason,
    }
    if result.unreadable:
        # Only when it happens: a document whose content is missing was not searched.
        out["unreadable"] = list(result.unreadable)
    if result.corrupt:
        # Only when it happens: a document whose bytes failed their recorded hash was not searched.
        out["corrupt"] = list(result.corrupt)
    return out


def binding(b: FrozenBinding) -> Json:
    """One effective root: the configured binding plus the rows it resolved to."""
    out: Json = {"name": b.name, "scope": b.scope, "access": b.access}
    if b.conversation_public_id:
        out["conversation_public_id"] = b.conversation_public_id
    out["anchor_public_id"] = b.anchor_public_id
    if b.scope in ("agent", "speaker"):
        out["agent_public_id"] = b.agent_public_id
    if b.scope == "speaker":
        out["speaker_public_id"] = b.speaker_public_id
    return out


def conversation(conv: Conversation, ctx: Context) -> Json:
    """A conversation with the roots its memory resolves to for the caller of `ctx`."""
    return {
        "public_id": conv.public_id,
        "workspace_public_id": conv.workspace_id,
        "answering_agent_public_id": conv.answering_agent_id,
        "parent_public_id": conv.parent_public_id,
        "context_revision": conv.context_revision,
        "archived": conv.archived,
        "created_at": conv.created_at,
        "memory_context": conv.memory_context,
        "effective_memory_context": {"bindings": [binding(s.frozen()) for s in ctx.readable()]},
    }


def workspace(ws: Workspace) -> Json:
    return {
        "public_id": ws.public_id,
        "name": ws.name,
        "created_at": ws.created_at,
        "tool_provider_overrides": ws.tool_provider_overrides,
        "settings": {"dedup": {"enabled": ws.dedup_enabled}},
    }


def account(a: Account) -> Json:
    return {"public_id": a.public_id, "name": a.name, "created_at": a.created_at}


def human(h: Human) -> Json:
    return {"public_id": h.public_id, "name": h.name, "created_at": h.created_at}


def member(m: Member) -> Json:
    return {
        "workspace_public_id": m.workspace_id,
        f"{m.principal_kind}_public_id": m.principal_id,
        "role": m.role,
        "created_at": m.created_at,
    }


def agent(a: Agent) -> Json:
    return {
        "public_id": a.public_id,
        "name": a.name,
        "kind": a.kind,
        "steward_public_id": a.steward_id,
        "memory_context_limit": a.memory_context_limit,
        "created_at": a.created_at,
        "deployment": a.deployment,
        "memories": [{"memory_id": m.memory_id, "mode": m.mode, "read_first": m.read_first} for m in a.memories],
    }


def speaker(s: Speaker) -> Json:
    return {"public_id": s.public_id, "name": s.name, "agent_public_id": s.agent_id, "created_at": s.created_at}


def execution(ex: Execution, *, stopped: bool = False) -> Json:
    return {
        "public_id": ex.public_id,
        "workspace_public_id": ex.workspace_id,
        "conversation_public_id": ex.conversation_id,
        "agent_public_id": ex.agent_id,
        "principal": {"kind": ex.principal_kind, "public_id": ex.principal_id},
        "subject": {"speaker_public_id": ex.speaker_id} if ex.speaker_id else None,
        "mail_from_execution_public_id": ex.mail_from_id,
        "bindings": [binding(b) for b in ex.bindings],
        "tools": ex.tools,
        "created_at": ex.created_at,
        "expires_at": clock.iso_of(int(ex.expires_at)),
        # A new execution runs; the stop route answers it stopped (a stop is final).
        "stopped": stopped,
    }


def skill(s: Skill) -> Json:
    out: Json = {"name": s.name, "description": s.document.description, "path": s.path}
    if s.content is not None:
        out["content"] = s.content
    return out


def _included(e: Entry) -> Json:
    return {
        "path": e.path,
        "public_id": e.public_id,
        "lock_version": e.lock_version,
        "bytesize": e.bytesize,
        "written_at": e.written_at,
        "pii": list(e.pii),
    }


def _omitted(e: Entry) -> Json:
    return {"path": e.path, "bytesize": e.bytesize, "written_at": e.written_at, "pii": list(e.pii)}


def block(b: Block) -> Json:
    out: Json = {
        "context_revision": b.context_revision,
        "budget_bytes": b.budget_bytes,
        "used_bytes": b.plan.used_bytes,
        "text": b.text,
        "included": [_included(e) for e in b.plan.included],
        "omitted": [_omitted(e) for e in b.plan.omitted],
        "overridden_by": b.overridden_by,
    }
    if b.plan.missing:
        # Only when it happens: documents left out because their content is missing from storage.
        out["unreadable"] = [_omitted(e) for e in b.plan.missing]
    if b.plan.corrupt:
        # Only when it happens: documents left out because their bytes failed their recorded hash.
        out["corrupt"] = [_omitted(e) for e in b.plan.corrupt]
    if b.plan.quarantined:
        # Only when it happens: documents awaiting review, which no model reads.
        out["quarantined"] = [_omitted(e) for e in b.plan.quarantined]
    if b.memories is not None:
        # An execution's block: the mounted Memories it names for the model to open on demand.
        out["memories"] = [
            {"memory_id": m.memory_id, "name": m.name, "description": m.description, "path": m.path, "mode": m.mode}
            for m in b.memories
        ]
    return out


def tool_result(r: ToolResult) -> Json:
    return {"tool": r.tool, "is_error": r.code is not None, "code": r.code, "content": r.content, "data": r.data}


# ---- organization Memories ---------------------------------------------------------------------------


def memory(view: MemoryView, *, listed: bool = False) -> Json:
    m, st = view.memory, view.stats
    d, a = m.default, m.access
    out: Json = {
        "memory_id": m.memory_id,
        "name": m.name,
        "description": m.description,
        "source": m.source,
        "archived": m.archived,
        "default": None
        if d is None
        else {"reach": d.reach, "deployment": d.deployment, "mode": d.mode, "read_first": d.read_first},
        "access": None if a is None else {"humans": list(a.humans), "workspaces": list(a.workspaces)},
        "created_by": author(m.created_by),
        "created_at": m.created_at,
        "file_count": st.file_count,
        "bytesize": st.bytesize,
        "written_by": None if st.written_by is None else author(st.written_by),
        "written_at": st.written_at,
    }
    if m.git is not None:
        out["git"] = {"url": m.git.url, "ref": m.git.ref, "path": m.git.path, "commit": m.git.commit}
    if m.promoted_from is not None:
        out["promoted_from"] = promoted_from(m.promoted_from)
    if listed:
        out["attachment_count"] = m.attachment_count
    if view.referenced_by is not None:
        out["referenced_by"] = [
            {
                "agent_public_id": r.agent_public_id,
                "name": r.name,
                "via": r.via,
                "mode": r.mode,
                "read_first": r.read_first,
            }
            for r in view.referenced_by
        ]
    return out


def memory_page(page: MemoryPage) -> Json:
    return {"memories": [memory(v, listed=True) for v in page.memories], "next_cursor": page.next_cursor}


def file_summary(doc: Document, path: str | None = None) -> Json:
    return {
        "path": doc.rest if path is None else path,
        "public_id": doc.public_id,
        "lock_version": doc.lock_version,
        "bytesize": doc.bytesize,
        "written_at": doc.written_at,
        "written_by": author(doc.author),
        "content_sha256": doc.sha256,
    }


def file_page(page: FilePage) -> Json:
    return {"files": [file_summary(d) for d in page.files], "next_cursor": page.next_cursor}


def file(loc: Located) -> Json:
    """A Memory's file: the document view without the skill-only description."""
    out = document(loc)
    out.pop("description", None)
    return out


def mount(m: Mount) -> Json:
    out: Json = {"path": m.path, "kind": m.kind}
    if m.memory_id is not None:
        out |= {"memory_id": m.memory_id, "name": m.name}
    out |= {"mode": m.mode, "source": m.source}
    if m.read_first is not None:
        out["read_first"] = m.read_first
    return out


def roots(ctx: Context) -> list[Json]:
    """The roots a context reads, each with whether the caller may write it, as a model is told them."""
    from agent_memory.core.access import access_of

    return [{"root": f"{src.name}/", "scope": src.scope, "access": access_of(src)} for src in ctx.readable()]


def lease(le: Lease) -> Json:
    at = clock.iso_of(le.expires_at)
    return {"path": le.path, "holder": author(le.holder), "expires_at": at}


def effective_memories(rows: list[Effective]) -> Json:
    return {
        "memories": [
            {
                "memory_id": e.memory_id,
                "name": e.name,
                "mode": e.mode,
                "read_first": e.read_first,
                "via": e.via,
                "source": e.source,
                "archived": e.archived,
            }
            for e in rows
        ]
    }


def sync(result: SyncResult) -> Json:
    return {
        "memory": memory(result.view),
        "sync": {"commit": result.commit, "changed": result.changed, "removed": result.removed},
    }


def record(r: TypedRecord) -> Json:
    return {
        "public_id": r.public_id,
        "workspace_public_id": r.workspace_id,
        "layer": r.layer,
        "type": r.type,
        "content": r.content,
        "tags": {"facet": r.facet, "labels": list(r.labels)},
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
        "author": author(r.author),
        "created_at": r.created_at,
        "updated_at": r.updated_at,
        "last_seen_at": r.last_seen_at or r.created_at,
        "mention_count": r.mention_count,
        "evidence_count": r.evidence_count,
        "stability": r.stability,
        "pii": list(r.pii),
        "quarantine": quarantine(r.quarantine),
        "lock_version": r.lock_version,
    }


def appended(a: Appended) -> Json:
    return {
        "record": record(a.record),
        "merged": a.merged,
        "content_replaced": a.content_replaced,
        "operation_id": a.operation_id,
    }


def record_search(page: SearchPage) -> Json:
    out: Json = {
        "results": [{"record": record(r), "score": score} for r, score in page.results],
        "next_cursor": page.next_cursor,
    }
    if page.truncated:
        out["truncated"] = True
    return out


def consolidation(c: Consolidation) -> Json:
    out: Json = {"status": "consolidated", "created": c.created, "merged": c.merged, "extraction": c.extraction}
    if c.instructions_ignored:
        out["note"] = (
            "extraction_instructions were ignored: no model is configured, so lines are split into clauses by rule."
        )
    out["remaining"] = c.remaining
    return out


def record_lines(page: ExportPage) -> str:
    """An export page as NDJSON: one record a line, in the shape a read by id answers (already masked)."""
    return "".join(json.dumps(record(r), ensure_ascii=False) + "\n" for r in page.records)


# ---- a conversation's store entries and merges -----------------------------------------------------


def store_entry(e: StoreEntry, *, value: bool = False) -> Json:
    """An entry as the listing shows it; with `value` as show and write answer it."""
    import json

    out: Json = {"key": e.key, "lock_version": e.lock_version, "bytesize": e.bytesize, "updated_at": e.updated_at}
    if value:
        out["value"] = json.loads(e.value_json)
    return out


def merged(landed: list[str], kept: list[str], parent: Conversation, ctx: Context) -> Json:
    return {"merge": {"landed": landed, "kept": kept, "conversation": conversation(parent, ctx)}}
