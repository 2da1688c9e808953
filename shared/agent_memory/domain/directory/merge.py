"""Merging a fork back: the child's conversation/ documents folded into its parent, three-way.

The base of each path is the pair the fork copied (its `ForkBase`, kept with the child). Per path:

    child      parent     outcome
    = base     any        kept (the parent's, whatever it is)
    changed    = base     the child's version lands on the parent (written, or deleted)
    changed    changed    the same change on both (same content hash, or deleted on both): kept;
                          otherwise a conflict: `fail` refuses the merge (merge_conflict), `prefer_child`
                          lands the child's, `prefer_parent` keeps the parent's

"Changed" compares (public_id, lock_version) with the base, so a create (no base) or a delete on one side
is a change too. What lands is a pointer to the child's existing version: no content byte moves. The
parent's changes go in one conditional commit (store/merge.py) that also bumps its context_revision once,
conditioned on the revision read, so a parent changed during the merge refuses it stale_object.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from agent_memory.api.errors import ApiError
from agent_memory.core import access, clock
from agent_memory.core.budget import Budgets
from agent_memory.core.context import Context
from agent_memory.core.idempotency import settle, suspended
from agent_memory.core.ids import PresentedToken, now_iso, uuid7
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import (
    MAX_DOCUMENTS_PER_ANCHOR,
    Anchor,
    Conversation,
    Document,
    ForkBase,
    MergeChange,
    MergeConflict,
    MergedFrom,
    Version,
)
from agent_memory.core.ports import MergeStore, Ref
from agent_memory.core.resolver import Resolver

Strategy = Literal["fail", "prefer_child", "prefer_parent"]
Pair = tuple[str, int]


@dataclass(frozen=True, slots=True)
class MergePlan:
    """What a merge does: the parent's changes (with the child's row each lands), and the paths it keeps."""

    changes: list[MergeChange]
    landed_from: dict[str, Document | None]
    kept: list[str]
    conflicts: list[MergeConflict]


@dataclass(frozen=True, slots=True)
class MergeResult:
    landed: list[str]
    kept: list[str]
    parent: Conversation
    context: Context


def _pair(doc: Document | None) -> Pair | None:
    return None if doc is None else (doc.public_id, doc.lock_version)


def _same(a: Document | None, b: Document | None) -> bool:
    """The same change on both sides: both deleted, or both holding the same content."""
    if a is None or b is None:
        return a is None and b is None
    return a.sha256 == b.sha256


def plan_merge(
    base: dict[str, Pair], parent: dict[str, Document], child: dict[str, Document], strategy: Strategy
) -> MergePlan:
    """The three-way table over every path of the base and of either side, in path order."""
    changes: list[MergeChange] = []
    landed_from: dict[str, Document | None] = {}
    kept: list[str] = []
    conflicts: list[MergeConflict] = []
    for rest in sorted(set(base) | set(parent) | set(child)):
        b, p, c = base.get(rest), parent.get(rest), child.get(rest)
        child_changed = _pair(c) != b
        parent_changed = _pair(p) != b
        lands = False
        if child_changed and not parent_changed:
            lands = True
        elif child_changed and not _same(p, c):
            if strategy == "fail":
                conflicts.append(MergeConflict(f"conversation/{rest}", b, _pair(p), _pair(c)))
            lands = strategy == "prefer_child"
        if lands and not (p is None and c is None):
            changes.append(MergeChange(rest, _pair(p), c))
            landed_from[rest] = c
        else:
            kept.append(f"conversation/{rest}")
    return MergePlan(changes, landed_from, kept, conflicts)


def _conflict(conflicts: list[MergeConflict]) -> ApiError:
    def side(pair: Pair | None) -> dict[str, object] | None:
        return None if pair is None else {"public_id": pair[0], "lock_version": pair[1]}

    paths = ", ".join(c.path for c in conflicts[:5]) + (" ..." if len(conflicts) > 5 else "")
    return ApiError(
        "merge_conflict",
        f"{len(conflicts)} path(s) changed on both sides to different content ({paths}): nothing changed. "
        'Merge with "strategy": "prefer_child" or "prefer_parent" to resolve every conflict one way.',
        conflicts=[
            {"path": c.path, "base": side(c.base), "parent": side(c.parent), "child": side(c.child)} for c in conflicts
        ],
    )


class MergeService:
    def __init__(self, store: MergeStore, resolver: Resolver, budgets: Budgets | None = None) -> None:
        self.resolver = resolver
        self.store = store
        self.budgets = budgets or Budgets()

    def merge(
        self, presented: PresentedToken | None, ws_id: str, child_id: str, into: str, strategy: Strategy
    ) -> MergeResult:
        if into != "parent":  # the request model refuses any other word; a fork merges into its parent only
            raise ApiError("parameter_invalid", 'merge.into must be "parent".')
        base_ref = Ref.fork_base(child_id)
        ctx = self.resolver.conversation(presented, ws_id, child_id, write=True, extra=(base_ref,))
        child = ctx.conversation
        if child is None:
            raise access.not_found("conversation")
        if child.parent_public_id is None:
            raise ApiError("validation_failed", "This conversation is not a fork: it has no parent to merge into.")
        parent_ref = Ref.conversation(child.parent_public_id)
        ctx.fetch([parent_ref])
        parent: Conversation | None = ctx.loaded.get(parent_ref)
        ws = ctx.workspace
        member = ctx.loaded.get(Ref.member(ws.public_id, ctx.principal.public_id)) if ws is not None else None
        standing = access.conversation_standing(ctx.principal, ws, member, parent)
        if parent is None or standing is None:
            raise ApiError("not_found", "The parent of this fork no longer exists or is not visible to you.")
        access.require_write_standing(standing, "You have no write standing on the parent conversation.")
        if parent.archived:
            raise ApiError("conversation_archived", "The parent conversation is archived: its memory is read-only.")
        # The child is marked as holding bytes another conversation may point at before its rows are read:
        # a redaction there then leaves what the merge lands to the sweeper (as a fork marks its parent).
        now = clock.now()
        with suspended():  # written ahead of the change: not the commit that records the answer
            self.store.update_conversation(child.public_id, forked_at=now)
        child_anchor, parent_anchor = Anchor("conversation", child.public_id), Anchor("conversation", parent.public_id)
        listed = self.store.list_many([child_anchor, parent_anchor])
        fork_base: ForkBase | None = ctx.loaded.get(base_ref)
        plan = plan_merge(
            fork_base.documents if fork_base is not None else {},
            {d.rest: d for d in listed[parent_anchor]},
            {d.rest: d for d in listed[child_anchor]},
            strategy,
        )
        if plan.conflicts:
            raise _conflict(plan.conflicts)
        landed = [f"conversation/{c.rest}" for c in plan.changes]
        count = len(listed[parent_anchor]) + sum((c.expected is None) - (c.new is None) for c in plan.changes)
        if count > MAX_DOCUMENTS_PER_ANCHOR:
            raise ApiError(
                "memory_full",
                f"The merge would leave the parent with {count} documents; it holds at most "
                f"{MAX_DOCUMENTS_PER_ANCHOR}: nothing changed.",
            )
        author = ctx.author()
        written_at = now_iso()
        changes: list[MergeChange] = []
        versions: list[Version] = []
        for c in plan.changes:
            if c.new is None:
                changes.append(c)
                continue
            pid, lv = (uuid7(), 0) if c.expected is None else (c.expected[0], c.expected[1] + 1)
            # A new version of the parent's document pointing at the child's immutable object.
            row = replace(
                c.new, anchor=parent_anchor, public_id=pid, lock_version=lv, author=author, written_at=written_at
            )
            changes.append(MergeChange(c.rest, c.expected, row))
            source = MergedFrom(child.public_id, c.new.public_id, c.new.lock_version)
            versions.append(Version.of(row, "merge", now, merged_from=source))
        merged = replace(parent, context_revision=parent.context_revision + 1) if changes else parent
        result = MergeResult(landed, plan.kept, merged, self.resolver.conversation_context_of(ctx, merged))
        settle(result)
        if changes:
            self.store.merge_into(
                parent.public_id, changes, versions, parent.context_revision, self.budgets.of(ctx.principal)
            )
        return result
