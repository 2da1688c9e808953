"""The memory block: the leading text a conversation's next reply is assembled from.

Documents are spent newest-first against a byte budget and the walk stops at the first one that does
not fit, so what renders is always a prefix of the newest documents; every document past that point is
still named (path, size, age) so the model knows it exists. skills/ rows never render here: the skills
catalog is their channel.

Rendering (the budget counts each included document's whole section, opening tag to closing tag):

    <memory_block boundary="3f9a0c2e7b1d4a65">
    <document-3f9a0c2e7b1d4a65 path="conversation/plan.md" written_at="2026-09-08T00:00:00.000Z">
    ...content, verbatim...
    </document-3f9a0c2e7b1d4a65>
    <omitted reason="byte_budget">
    <document path="workspace/big.md" bytesize="70000" written_at="..."/>
    </omitted>
    </memory_block>

Content is untrusted text, so it cannot be allowed to close its own element: a document containing
`</document></memory_block>` would otherwise fake structure for every model reading the block. Each
included document is framed by tags carrying the block's boundary, 16 hex digits that no included content
contains: a hash of the included contents themselves (content cannot contain a hash of itself), re-drawn
with a counter in the astronomically unlikely case one does. It is declared once on the wrapper. Only
`</document-<boundary>>` ends a document; anything else inside is content. The boundary is deterministic,
so the same memory renders the same block (prompt caches keep working). Content is never escaped: the
model reads, and copies into an edit's old_text, exactly the stored text, and each section's size stays
known from the rows (`bytesize`) before any content is read, since the tags' length does not depend on
which boundary is drawn.

The wrapper lines and the omitted index are not charged to the budget: naming what did not fit must
never itself be cut by the budget. A conversation with no renderable document renders "".

`plan` and `render` are pure (the property tests drive them directly); `BlockService` feeds them
from the store: one Query per bound anchor in parallel, then only the included contents, in parallel
and cached by their immutable keys, so an omitted document's body is never fetched.

A document whose content object is missing from storage (swept too early, deleted by hand) is planned
out and named in a last, uncharged `<omitted reason="content_missing">` index; the rest still render. One
whose bytes no longer hash to what its version recorded (edited, truncated or swapped behind the service)
is planned out the same way and named under `<omitted reason="content_corrupt">`.
A document whose current version is quarantined (it resembles prompt injection and awaits review) is
never rendered: it is named in an uncharged `<omitted reason="quarantined">` index.

An execution's block (`BlockService.assemble_session`) adds, after the conversation's documents, a
memories section for the Memories its session mounts:

    <memories>
    <document-3f9a0c2e7b1d4a65 path="/memory/handbook/intro.md" written_at="...">
    ...content, verbatim...
    </document-3f9a0c2e7b1d4a65>
    <memory name="ops" path="/workspace/ops" mode="readonly" description="runbooks for the on-call"/>
    </memories>

The files of read_first mounts render in full, charged like any document, in ONE walk with the
conversation's: the conversation's documents newest first, then the read_first files newest first, and
the first that does not fit ends it (everything past it, conversation document or file, is named in the
byte_budget index by the path the session knows it by). Every other mounted Memory is named, uncharged,
for the model to open on demand; its description is a person's text, escaped like every attribute. The
section's own two lines are uncharged, like the wrapper's.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from html import escape

from agent_memory.api.errors import ApiError
from agent_memory.core.context import Context
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import Anchor, Document, Execution, Held, Mount, MountMode, OrgMemory
from agent_memory.core.ports import Ref

DEFAULT_BUDGET_BYTES = 16 * 1024
MAX_BUDGET_BYTES = 1024 * 1024
BOUNDARY_HEX = 16
# Any boundary has this length, so a section's cost is known before the boundary is drawn.
_SIZING_BOUNDARY = "0" * BOUNDARY_HEX


@dataclass(frozen=True, slots=True)
class Entry:
    """One renderable document as the block sees it."""

    path: str
    bytesize: int
    written_at: str
    public_id: str = ""
    lock_version: int = 0
    content_key: str = ""
    pii: tuple[str, ...] = ()
    # The hash its version recorded: the store checks the fetched bytes against it.
    sha256: str = ""
    # A file of a read_first mount (its path absolute): rendered in the memories section.
    mounted: bool = False


@dataclass(frozen=True, slots=True)
class OnDemand:
    """A mounted Memory the block names, not renders: the model opens its files with the tools."""

    memory_id: str
    name: str
    description: str
    path: str
    mode: MountMode


@dataclass(frozen=True, slots=True)
class Plan:
    included: tuple[Entry, ...]
    omitted: tuple[Entry, ...]
    used_bytes: int
    # Documents whose content object is missing from storage: planned without, and named in the block.
    missing: tuple[Entry, ...] = ()
    # Documents whose current version awaits review (or was rejected): never rendered, only named.
    quarantined: tuple[Entry, ...] = ()
    # Documents whose bytes no longer match their recorded hash: never rendered, named in the block.
    corrupt: tuple[Entry, ...] = ()


def newest_first(entries: Iterable[Entry]) -> list[Entry]:
    """Newest written_at first; equal times by path, so the order never depends on storage order."""
    by_path = sorted(entries, key=lambda e: e.path)
    # A reverse sort is stable, so equal written_at values keep the path order from the first pass.
    return sorted(by_path, key=lambda e: e.written_at, reverse=True)


def _open_tag(entry: Entry, boundary: str) -> str:
    return f'<document-{boundary} path="{escape(entry.path)}" written_at="{escape(entry.written_at)}">\n'


def _close_tag(boundary: str) -> str:
    return f"\n</document-{boundary}>\n"


def section_cost(entry: Entry) -> int:
    """Bytes one included document adds to the block: its opening tag, its content and its closing tag."""
    tags = _open_tag(entry, _SIZING_BOUNDARY) + _close_tag(_SIZING_BOUNDARY)
    return len(tags.encode()) + entry.bytesize


def plan(entries: Iterable[Entry], budget_bytes: int) -> Plan:
    return walk(newest_first(entries), budget_bytes)


def walk(ordered: Sequence[Entry], budget_bytes: int) -> Plan:
    """Spend the budget on `ordered` as given; the first entry that does not fit ends the walk."""
    ordered = list(ordered)
    used = 0
    for index, entry in enumerate(ordered):
        cost = section_cost(entry)
        if used + cost > budget_bytes:
            # The first miss ends the walk: a smaller, older document after it would break the prefix.
            return Plan(tuple(ordered[:index]), tuple(ordered[index:]), used)
        used += cost
    return Plan(tuple(ordered), (), used)


def _candidate(texts: Sequence[str], attempt: int) -> str:
    digest = hashlib.sha256(str(attempt).encode())
    for text in texts:
        data = text.encode("utf-8", "surrogatepass")
        # Length-prefixed, so two different lists of texts never hash the same bytes.
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()[:BOUNDARY_HEX]


def boundary(texts: Sequence[str]) -> str:
    """A boundary no text contains, the same every time for the same texts."""
    for attempt in itertools.count():
        token = _candidate(texts, attempt)
        if not any(token in text for text in texts):
            return token
    raise AssertionError("unreachable: itertools.count() never ends")


def _index(reason: str, entries: Sequence[Entry]) -> list[str]:
    """The uncharged index naming documents the block holds no text of, and why."""
    if not entries:
        return []
    lines = [f'<omitted reason="{reason}">\n']
    lines += [
        f'<document path="{escape(e.path)}" bytesize="{e.bytesize}" written_at="{escape(e.written_at)}"/>\n'
        for e in entries
    ]
    lines.append("</omitted>\n")
    return lines


def _on_demand(m: OnDemand) -> str:
    return (
        f'<memory name="{escape(m.name)}" path="{escape(m.path)}" mode="{m.mode}" '
        f'description="{escape(m.description)}"/>\n'
    )


def render(p: Plan, contents: Mapping[str, str], memories: Sequence[OnDemand] = ()) -> str:
    """The block's text; `contents` maps each included entry's content_key to its text, and `memories`
    are the mounted Memories named for the model to open on demand (an execution's block only)."""
    if not p.included and not p.omitted and not p.missing and not p.quarantined and not p.corrupt and not memories:
        return ""
    texts = [contents[entry.content_key] for entry in p.included]
    token = boundary(texts)
    parts = [f'<memory_block boundary="{token}">\n']
    section = False
    for entry, text in zip(p.included, texts, strict=True):
        if entry.mounted and not section:
            # The walk puts every conversation document before any mounted file, so one section holds them.
            parts.append("<memories>\n")
            section = True
        parts += [_open_tag(entry, token), text, _close_tag(token)]
    if memories and not section:
        parts.append("<memories>\n")
        section = True
    parts += [_on_demand(m) for m in memories]
    if section:
        parts.append("</memories>\n")
    parts += _index("byte_budget", p.omitted)
    # Named like the budget's index, and like it not charged: the model should know these exist.
    parts += _index("content_missing", p.missing)
    parts += _index("content_corrupt", p.corrupt)
    parts += _index("quarantined", p.quarantined)
    parts.append("</memory_block>\n")
    return "".join(parts)


def _anchors(ctx: Context) -> dict[Anchor, str]:
    """The conversation's anchors, each under the first root that binds it.

    Two bindings can name one anchor (an alias of the current conversation): its rows render once,
    under the first binding, rather than spending the budget twice on the same text.
    """
    seen: dict[Anchor, str] = {}
    for src in ctx.readable():
        seen.setdefault(src.anchored, src.name)
    return seen


def _entry(path: str, doc: Document, *, mounted: bool = False) -> Entry:
    return Entry(
        path,
        doc.bytesize,
        doc.written_at,
        doc.public_id,
        doc.lock_version,
        doc.content_key,
        doc.pii,
        doc.sha256,
        mounted,
    )


def _split(rows: Iterable[tuple[str, Document]], *, mounted: bool = False) -> tuple[list[Entry], list[Entry]]:
    """Renderable entries, and those held back because their current version is quarantined."""
    out: list[Entry] = []
    held: list[Entry] = []
    for path, doc in rows:
        (held if doc.hidden_from_models else out).append(_entry(path, doc, mounted=mounted))
    return out, held


def _conversation_rows(
    seen: Mapping[Anchor, str], listed: Mapping[Anchor, list[Document]]
) -> list[tuple[str, Document]]:
    # skills/ rows never render here: the skills catalog is their channel.
    return [
        (f"{root}/{doc.rest}", doc)
        for anchor, root in seen.items()
        for doc in listed[anchor]
        if not doc.rest.startswith("skills/")
    ]


def entries_of(ctx: Context) -> tuple[list[Entry], list[Entry]]:
    """Every renderable document of the conversation's available sources, and those held back because
    their current version is quarantined (named in the block, never rendered)."""
    seen = _anchors(ctx)
    out, held = _split(_conversation_rows(seen, ctx.store.list_many(list(seen))))
    return out, newest_first(held)


@dataclass(frozen=True, slots=True)
class Block:
    """An assembled block: the text, what it spent, and which documents it holds or only names."""

    context_revision: int
    budget_bytes: int
    overridden_by: str | None
    plan: Plan = Plan((), (), 0)
    text: str = ""
    # An execution's block: the mounted Memories it names for opening on demand (None: a conversation's).
    memories: tuple[OnDemand, ...] | None = None


class BlockService:
    def assemble(self, ctx: Context, budget_bytes: int, expected_context_revision: int | None) -> Block:
        conv = ctx.conversation
        if conv is None:
            raise ApiError("not_found", "The memory block belongs to a conversation.")
        if expected_context_revision is not None and expected_context_revision != conv.context_revision:
            raise ApiError(
                "stale_object",
                f"The conversation's context_revision is {conv.context_revision}, not the "
                "expected_context_revision you sent: its memory changed since you looked.",
            )
        if ctx.override_provider is not None:
            # The provider's memory reaches the model through its own tools; the kernel's rows wait.
            return Block(conv.context_revision, budget_bytes, ctx.override_provider)
        entries, held = entries_of(ctx)
        p, contents = _settled(ctx, newest_first(entries), budget_bytes)
        p = replace(p, quarantined=tuple(held))
        return Block(conv.context_revision, budget_bytes, None, p, render(p, contents))

    def assemble_session(self, ex: Execution, ctx: Context, budget_bytes: int) -> Block:
        """An execution's block: the conversation's documents, then its mounted Memories (module doc).

        Rows come in three rounds: the mounted Memories' rows (their descriptions, and whether they still
        exist), then one parallel Query per anchor (the conversation's and the read_first Memories'), then
        only the included contents."""
        conv = ctx.conversation
        if conv is None:
            raise ApiError("not_found", "The memory block belongs to a conversation.")
        mounted = [(m.memory_id, m) for m in ex.mounts if m.kind == "memory" and m.memory_id is not None]
        ctx.fetch([Ref.memory(mid) for mid, _ in mounted])
        rows: dict[str, OrgMemory] = {}
        for mid, _ in mounted:
            row: OrgMemory | None = ctx.loaded.get(Ref.memory(mid))
            if row is not None:  # a Memory deleted since the session began has nothing left to show
                rows[mid] = row
        # Each Memory renders under one mount only, and one read first is not also offered on demand.
        first: dict[str, Mount] = {}
        offered: dict[str, OnDemand] = {}
        for mid, m in mounted:
            if mid in rows and m.read_first:
                first.setdefault(mid, m)
        for mid, m in mounted:
            if mid in rows and mid not in first and mid not in offered:
                # The description the session began with: a later edit moves only new sessions.
                described = m.description if m.description is not None else rows[mid].description
                offered[mid] = OnDemand(mid, m.name or rows[mid].name, described, m.path, m.mode)
        # Under a provider override the workspace's documents are the provider's; a Memory is the account's.
        seen = {} if ctx.override_provider is not None else _anchors(ctx)
        anchors = list(seen) + [Anchor("memory", mid) for mid in first]
        listed = ctx.store.list_many(list(dict.fromkeys(anchors)))
        conversation, held = _split(_conversation_rows(seen, listed))
        files, held_files = _split(
            ((f"{m.path}/{doc.rest}", doc) for mid, m in first.items() for doc in listed[Anchor("memory", mid)]),
            mounted=True,
        )
        # One walk: the conversation's documents newest first, then the read_first files newest first.
        p, contents = _settled(ctx, newest_first(conversation) + newest_first(files), budget_bytes)
        p = replace(p, quarantined=tuple(newest_first(held) + newest_first(held_files)))
        memories = tuple(offered.values())
        text = render(p, contents, memories)
        return Block(conv.context_revision, budget_bytes, ctx.override_provider, p, text, memories)


def _settled(ctx: Context, ordered: list[Entry], budget_bytes: int) -> tuple[Plan, Mapping[str, str]]:
    """The walk of `ordered` and the included contents, planned again without any whose object is missing
    or whose bytes fail their recorded hash (the store checks each; those are named, never rendered)."""
    missing: list[Entry] = []
    corrupt: list[Entry] = []
    while True:
        p = walk(ordered, budget_bytes)
        read = ctx.store.read_contents([_held(e) for e in p.included])
        contents = read.texts
        bad = [e for e in p.included if e.content_key in read.corrupt]
        gone = [e for e in p.included if e.content_key not in contents and e.content_key not in read.corrupt]
        if not gone and not bad:
            break
        # A document whose content object is missing or corrupt breaks only itself: plan again without it,
        # so the budget it would have used goes to the next documents and the byte accounting stays exact.
        # Each round drops at least one entry; the contents already read are cached.
        missing += gone
        corrupt += bad
        ordered = [e for e in ordered if e not in gone and e not in bad]
    return replace(p, missing=tuple(missing), corrupt=tuple(corrupt)), contents


def _held(e: Entry) -> Held:
    return Held(e.content_key, e.sha256, e.path, e.lock_version)
