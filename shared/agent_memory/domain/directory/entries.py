"""A conversation's store entries: client state that no prompt reads.

Entries are not memory: no listing, block, grep, tool or context_revision sees them, and a write bumps
nothing. They fork with the conversation (directory.py copies their pages in the fork's transaction) and
are independent afterwards. Viewers read them, members write them, an archived conversation refuses
writes (`conversation_archived`), and every change is conditioned on the entry's lock_version.

All of a conversation's entries ride in the request's first batch (ENTRY_PAGES page items), so a listing
and a show cost that one BatchGetItem and a write one transaction more.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from agent_memory.api.errors import ApiError
from agent_memory.core import access
from agent_memory.core.budget import Budgets
from agent_memory.core.context import Context
from agent_memory.core.idempotency import settle
from agent_memory.core.ids import PresentedToken, now_iso
from agent_memory.core.model import (
    ENTRIES_PER_PAGE,
    ENTRY_PAGES,
    MAX_STORE_ENTRIES,
    MAX_STORE_ENTRY_BYTES,
    STORE_ENTRY_KEY,
    EntryPage,
    StoreEntry,
)
from agent_memory.core.ports import EntryPageFull, EntryStore, Ref
from agent_memory.core.resolver import Resolver

KEY_RE = re.compile(STORE_ENTRY_KEY + r"\Z")


def page_refs(conversation_id: str) -> tuple[Ref, ...]:
    """The refs of every entry page of a conversation (what its first batch reads)."""
    return tuple(Ref.entry_page(conversation_id, n) for n in range(ENTRY_PAGES))


def loaded_pages(ctx: Context, conversation_id: str) -> list[EntryPage]:
    """The pages a Context read, empty ones included (an absent page holds nothing)."""
    out = []
    for ref in page_refs(conversation_id):
        page: EntryPage | None = ctx.loaded.get(ref)
        out.append(page if page is not None else EntryPage(conversation_id, int(ref.b), {}))
    return out


def _home(key: str) -> int:
    """The page a key prefers when several have room: spreads creates, so racing ones rarely meet."""
    return int(hashlib.sha256(key.encode("ascii")).hexdigest()[:4], 16) % ENTRY_PAGES


def choose_page(pages: list[EntryPage], key: str) -> int | None:
    """Where a new entry goes: the emptiest page with room (the key's home page first among equals)."""
    home = _home(key)
    open_pages = [p for p in pages if len(p.entries) < ENTRIES_PER_PAGE]
    if not open_pages:
        return None
    best = min(open_pages, key=lambda p: (len(p.entries), (p.number - home) % ENTRY_PAGES))
    return best.number


def check_key(key: str) -> str:
    if not KEY_RE.match(key):
        raise ApiError(
            "parameter_invalid",
            "entry.key must be 1 to 128 characters of letters, digits, '.', '_', ':' and '-'.",
        )
    return key


def compact(value: Any) -> tuple[str, int]:
    """A value as compact JSON text and its size in UTF-8 bytes (store_entry_too_large past 16 KiB)."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        size = len(text.encode("utf-8"))
    except (ValueError, UnicodeEncodeError) as exc:
        raise ApiError("parameter_invalid", "entry.value must be JSON text (valid Unicode, finite numbers).") from exc
    if size > MAX_STORE_ENTRY_BYTES:
        raise ApiError(
            "store_entry_too_large",
            f"entry.value is {size} bytes as compact JSON; an entry holds at most {MAX_STORE_ENTRY_BYTES} bytes "
            f"({MAX_STORE_ENTRY_BYTES // 1024} KiB).",
        )
    return text, size


def _stale(key: str) -> ApiError:
    return ApiError(
        "stale_object",
        f"The store entry {key!r} is not at the expected_lock_version you sent (it changed, was created, or "
        "does not exist): read it again, then retry with its current version.",
    )


class StoreEntries:
    def __init__(self, store: EntryStore, resolver: Resolver, budgets: Budgets | None = None) -> None:
        self.resolver = resolver
        self.store = store
        self.budgets = budgets or Budgets()

    def _open(self, presented: PresentedToken | None, ws_id: str, conv_id: str, *, write: bool) -> Context:
        ctx = self.resolver.conversation(presented, ws_id, conv_id, write=write, extra=page_refs(conv_id))
        if ctx.conversation is None:
            raise access.not_found("conversation")
        return ctx

    def listing(self, presented: PresentedToken | None, ws_id: str, conv_id: str) -> list[StoreEntry]:
        ctx = self._open(presented, ws_id, conv_id, write=False)
        entries = [e for p in loaded_pages(ctx, conv_id) for e in p.entries.values()]
        return sorted(entries, key=lambda e: e.key)

    def show(self, presented: PresentedToken | None, ws_id: str, conv_id: str, key: str) -> StoreEntry:
        ctx = self._open(presented, ws_id, conv_id, write=False)
        check_key(key)
        for page in loaded_pages(ctx, conv_id):
            if key in page.entries:
                return page.entries[key]
        raise ApiError("store_entry_not_found", f"This conversation has no store entry {key!r}.")

    def _writable(self, presented: PresentedToken | None, ws_id: str, conv_id: str, key: str) -> Context:
        ctx = self._open(presented, ws_id, conv_id, write=True)
        check_key(key)
        conv = ctx.conversation
        if conv is not None and conv.archived:
            raise ApiError("conversation_archived", "The conversation is archived: its store entries are read-only.")
        return ctx

    def write(
        self, presented: PresentedToken | None, ws_id: str, conv_id: str, key: str, value: Any, expected: int | None
    ) -> StoreEntry:
        """Create (expected None: only while absent) or replace (at `expected`) one entry."""
        ctx = self._writable(presented, ws_id, conv_id, key)
        text, size = compact(value)
        budget = self.budgets.of(ctx.principal)
        pages = loaded_pages(ctx, conv_id)
        # A create whose chosen page filled meanwhile chooses again from fresh pages: each such refusal
        # means another create landed, so this ends once the creates in flight have.
        for _ in range(MAX_STORE_ENTRIES):
            holder = next((p for p in pages if key in p.entries), None)
            current = None if holder is None else holder.entries[key]
            if (None if current is None else current.lock_version) != expected:
                raise _stale(key)
            if holder is not None:
                page = holder.number
            else:
                chosen = choose_page(pages, key)
                if chosen is None:
                    raise ApiError(
                        "store_full",
                        f"This conversation already holds {MAX_STORE_ENTRIES} store entries: delete one first.",
                    )
                page = chosen
            entry = StoreEntry(key, 0 if expected is None else expected + 1, text, size, now_iso())
            settle(entry)
            try:
                self.store.write_entry(conv_id, page, entry, expected, budget)
            except EntryPageFull:
                budget = None  # spent by the refused attempt: the request is one mutation however many it takes
                got = self.store.get_many(list(page_refs(conv_id)))
                pages = [got[r] or EntryPage(conv_id, int(r.b), {}) for r in page_refs(conv_id)]
                continue
            return entry
        raise ApiError("storage_busy", "Too many store entries were created at once: try again.", retry_after_seconds=1)

    def delete(
        self, presented: PresentedToken | None, ws_id: str, conv_id: str, key: str, expected: int | None
    ) -> None:
        ctx = self._writable(presented, ws_id, conv_id, key)
        if expected is None:
            raise ApiError(
                "parameter_invalid",
                "To delete a store entry send the expected_lock_version you read; null only creates an absent key.",
            )
        holder = next((p for p in loaded_pages(ctx, conv_id) if key in p.entries), None)
        if holder is None or holder.entries[key].lock_version != expected:
            raise _stale(key)
        settle(None)
        self.store.delete_entry(conv_id, holder.number, key, expected, self.budgets.of(ctx.principal))
