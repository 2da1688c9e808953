"""A fork merged back: one conditional commit of pointer rows on the parent (merge.py decides which)."""

from __future__ import annotations

from typing import Any

from agent_memory.api.errors import ApiError
from agent_memory.core.model import (
    Anchor,
    ConversationBump,
    DocumentChange,
    MergeChange,
    Version,
    WriteBudget,
    max_documents,
)
from agent_memory.store import kinds
from agent_memory.store.commit import TRANSACTION_ITEMS, Refusal, Refusals, Step, transact
from agent_memory.store.documents import Documents
from agent_memory.store.forklog import fork_log_item
from agent_memory.store.items import marshal

# What the decisive commit may hold besides the pointer rows and records: the counter, the parent's
# revision, the fork log entry and the idempotency record.
_FIXED_ITEMS = 4


class Merges(Documents):
    def merge_into(
        self,
        parent_id: str,
        changes: list[MergeChange],
        versions: list[Version],
        expected_context_revision: int,
        budget: WriteBudget | None,
    ) -> None:
        """Land `changes` on the parent in one transaction, each conditioned on the pair the merge read there,
        the parent's revision on the one it read (so any concurrent change refuses the whole merge), the
        document counter on the cap. The new versions' records ride in it when everything fits in one
        transaction, else they go first (invisible without their pointers, like a fork's). The budget is
        spent before either (`spend`)."""
        anchor = Anchor("conversation", parent_id)
        steps: list[Step] = []
        delta = 0
        for c in changes:
            op = self._doc_op(DocumentChange(anchor, c.rest, c.expected, c.new))
            steps.append(("document", op))
            delta += (1 if c.expected is None else 0) - (1 if c.new is None else 0)
        if delta:
            steps.append(("meta", self._meta_op(anchor, delta)))
        steps.append(("conversation", self._bump_op(ConversationBump(parent_id, expected_context_revision))))
        copied = [c.new.content_key for c in changes if c.new is not None]
        if copied:
            # The sweeper's scan is no snapshot: like a fork, a merge points at versions of any age.
            steps.append(
                ("forklog", {"Put": {"TableName": self.table, "Item": marshal(fork_log_item(parent_id, copied))}})
            )
        records: list[Step] = [
            ("version", {"Put": {"TableName": self.table, "Item": kinds.VERSION.item(v)}}) for v in versions
        ]
        refusals = _merge_refusals(max_documents(anchor))
        self.spend(budget)
        if len(steps) + len(records) + 1 <= TRANSACTION_ITEMS:
            transact(self.ddb, [*steps, *records], refusals)
            return
        if records:
            # Not the decisive commit: the keyed request's record rides in the pointers' transaction.
            transact(self.ddb, records, Refusals(), decisive=False)
        transact(self.ddb, steps, refusals)


def _merge_refusals(cap: int) -> Refusals:
    def conversation_refused(old: dict[str, Any] | None) -> ApiError:
        if old is None or old.get("deleted_at") is not None:
            return ApiError("not_found", "The parent conversation no longer exists.")
        if old.get("archived"):
            return ApiError("conversation_archived", "The parent conversation is archived: its memory is read-only.")
        return _parent_changed()

    by_role: dict[str, Refusal] = {
        "conversation": conversation_refused,
        "document": lambda _: _parent_changed(),
        "meta": lambda _: ApiError(
            "memory_full", f"The merge would leave the parent with more than {cap} documents: nothing changed."
        ),
    }
    return Refusals(by_role, otherwise=_parent_changed)


def _parent_changed() -> ApiError:
    return ApiError(
        "stale_object",
        "The parent conversation changed while the merge was being prepared: nothing changed. Merge again to "
        "fold the child into the parent as it is now.",
    )
