"""Exports: a room's or a person's memory as NDJSON, with personal data masked.

An export is for people taking their memory elsewhere, so every document's current text is included,
quarantined ones too (marked), with each span the PII scan recognises replaced by `[kind]` (or
`[kind ****1234]`). A room's export walks the workspace's own documents, then each of its conversations
in the order they were created (the workspace keeps an index of them); it is paged, so no answer grows
past what a Lambda may return, and the cursor says where the next page starts.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from agent_memory.api.errors import ApiError
from agent_memory.core.context import Context
from agent_memory.core.ids import is_uuid
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import Anchor, Document
from agent_memory.core.ports import ExportStore, Ref
from agent_memory.render import views

# One page stops before it passes either bound (a Lambda answers at most 6 MB).
EXPORT_PAGE_BYTES = 3 * 1024 * 1024
EXPORT_PAGE_DOCUMENTS = 256
_CONVERSATIONS_PER_QUERY = 16


@dataclass(frozen=True, slots=True)
class ExportPage:
    lines: list[dict[str, Any]]
    next_cursor: str | None

    def ndjson(self) -> str:
        return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in self.lines)


@dataclass(frozen=True, slots=True)
class _Position:
    """Where a page starts: within an anchor ("workspace" or a conversation id), after a path."""

    anchor: str
    after: str


def _cursor(pos: _Position) -> str:
    raw = json.dumps({"a": pos.anchor, "p": pos.after}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _read_cursor(cursor: str) -> _Position:
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode())
        pos = _Position(str(raw["a"]), str(raw["p"]))
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError):
        raise ApiError(
            "parameter_invalid", "cursor is not one an export answered: send it exactly as it came."
        ) from None
    return pos


def _line(scope: str, owner: str, root: str, doc: Document, text: str | None, *, corrupt: bool) -> dict[str, Any]:
    from agent_memory.domain.safety.pii import mask

    line: dict[str, Any] = {
        "anchor": {"scope": scope, "public_id": owner},
        "path": f"{root}/{doc.rest}",
        "public_id": doc.public_id,
        "lock_version": doc.lock_version,
        "written_at": doc.written_at,
        "written_by": views.author(doc.author),
        # A skill's description is the writer's text as much as its content is: masked the same way.
        "description": None if doc.description is None else mask(doc.description),
        "pii": list(doc.pii),
        "quarantine": views.quarantine(doc.quarantine),
        # None when the content object is missing from storage or fails its recorded hash (the document is
        # still named).
        "content": None if text is None else mask(text),
    }
    if corrupt:
        # Only when it happens: the bytes stored for this version are not the ones it recorded.
        line["content_corrupt"] = True
    return line


class Exporter:
    def __init__(self, store: ExportStore) -> None:
        self.store = store

    def _page(
        self, anchors: list[tuple[str, str, str, Anchor]], start: _Position | None, more: bool
    ) -> tuple[list[tuple[str, str, str, Document]], _Position | None]:
        """The documents of `anchors` (scope, owner, root, anchor) from `start` on, up to the page bounds."""
        picked: list[tuple[str, str, str, Document]] = []
        spent = 0
        listed = self.store.list_many([a for *_, a in anchors])
        for scope, owner, root, anchor in anchors:
            key = "workspace" if scope == "workspace" else owner
            for doc in listed[anchor]:
                if start is not None and key == start.anchor and doc.rest <= start.after:
                    continue
                if picked and (spent + doc.bytesize > EXPORT_PAGE_BYTES or len(picked) >= EXPORT_PAGE_DOCUMENTS):
                    last_scope, last_owner, _, last = picked[-1]
                    return picked, _Position("workspace" if last_scope == "workspace" else last_owner, last.rest)
                picked.append((scope, owner, root, doc))
                spent += doc.bytesize
        if more and picked:
            last_scope, last_owner, _, last = picked[-1]
            return picked, _Position("workspace" if last_scope == "workspace" else last_owner, last.rest)
        return picked, None

    def _lines(self, picked: list[tuple[str, str, str, Document]]) -> list[dict[str, Any]]:
        read = self.store.read_contents([d.held(f"{r}/{d.rest}") for _, _, r, d in picked])
        return [
            _line(s, o, r, d, read.texts.get(d.content_key), corrupt=d.content_key in read.corrupt)
            for s, o, r, d in picked
        ]

    def room(self, ctx: Context, cursor: str | None) -> ExportPage:
        """A workspace's export page (the caller is a member: the workspace door opened with write standing)."""
        ws = ctx.workspace
        if ws is None:
            raise ApiError("not_found", "Nothing is found at this URL.")
        start = _read_cursor(cursor) if cursor else None
        anchors: list[tuple[str, str, str, Anchor]] = []
        after_conv: str | None = None
        if start is None or start.anchor == "workspace":
            anchors.append(("workspace", ws.public_id, "workspace", Anchor("workspace", ws.public_id)))
        else:
            # The cursor is the caller's to send back, so it is not trusted to name this room's conversation:
            # one read confirms it does, or an edited cursor would export any conversation's memory.
            ref = Ref.conversation(start.anchor)
            if is_uuid(start.anchor):
                ctx.fetch([ref])
            conv = ctx.loaded.get(ref)
            if conv is None or conv.workspace_id != ws.public_id:
                raise ApiError("parameter_invalid", "cursor is not one this workspace's export answered.")
            # Resume inside that conversation, then go on with the ones after it.
            anchors.append(("conversation", start.anchor, "conversation", Anchor("conversation", start.anchor)))
            after_conv = start.anchor
        ids, more = self.store.room_conversations(ws.public_id, after_conv, _CONVERSATIONS_PER_QUERY)
        anchors += [("conversation", c, "conversation", Anchor("conversation", c)) for c in ids]
        picked, nxt = self._page(anchors, start, more)
        if nxt is None and more and ids:
            # Every document of this round fitted, but the room has more conversations: continue after them.
            nxt = _Position(ids[-1], "\uffff")
        return ExportPage(self._lines(picked), None if nxt is None else _cursor(nxt))

    def own(self, ctx: Context, cursor: str | None) -> ExportPage:
        """The caller's own user/ (or, for an agent, agent/) documents."""
        (src,) = ctx.readable()
        anchor = src.anchored
        start = _read_cursor(cursor) if cursor else None
        if start is not None and start.anchor != anchor.owner_id:
            raise ApiError("parameter_invalid", "cursor is not one this export answered.")
        picked, nxt = self._page([(src.scope, anchor.owner_id, src.name, anchor)], start, False)
        return ExportPage(self._lines(picked), None if nxt is None else _cursor(nxt))
