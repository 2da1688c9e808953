"""The per-anchor and per-document bounds over HTTP: 64 documents, 64 KiB of UTF-8 each."""

from __future__ import annotations

import pytest

from ..support import Api, code, conv_base, pair
from .world import World, make_world

MAX_DOCS = 64
MAX_BYTES = 64 * 1024


@pytest.fixture
def w(api: Api) -> World:
    return make_world(api)


def _fill(w: World, base: str, root: str, count: int) -> dict[str, tuple[str, int]]:
    pairs = {}
    for i in range(count):
        r = w.api.write(w.owner, base, f"{root}/doc{i:02d}.md", f"document {i}")
        assert r.status_code == 201, f"document {i}: {r.text}"
        pairs[f"{root}/doc{i:02d}.md"] = pair(r)
    return pairs


# ---- memory_full --------------------------------------------------------------------------------------


def test_the_65th_document_under_one_anchor_is_refused(w: World) -> None:
    # Given a conversation holding 64 documents
    pairs = _fill(w, w.base, "conversation", MAX_DOCS)
    before = w.state()
    assert before[0] == MAX_DOCS
    # When a 65th is created, at the top level or in a folder
    for path in ("conversation/one-more.md", "conversation/deep/er.md"):
        r = w.api.write(w.owner, w.base, path, "too many")
        # Then it is refused memory_full, and nothing changed
        assert code(r) == (422, "memory_full"), r.text
        assert w.state() == before
    # And a create over a path that exists is stale, as anywhere: the path is taken, not the room
    assert code(w.api.write(w.owner, w.base, "conversation/doc00.md", "again")) == (409, "stale_object")
    assert w.state() == before
    # When an existing document in the full anchor is replaced, or edited
    replaced = w.api.write(w.owner, w.base, "conversation/doc00.md", "rewritten", pairs["conversation/doc00.md"])
    edited = w.api.edit(w.owner, w.base, "conversation/doc01.md", "document", "doc", pairs["conversation/doc01.md"])
    # Then both work: the count did not move
    assert replaced.status_code == 201, replaced.text
    assert edited.status_code == 200, edited.text
    assert len(w.listing()) == MAX_DOCS
    # When one is deleted
    assert w.api.delete(w.owner, w.base, "conversation/doc02.md", pairs["conversation/doc02.md"]).status_code == 204
    # Then exactly one new document fits again
    assert w.api.write(w.owner, w.base, "conversation/one-more.md", "fits now").status_code == 201
    assert code(w.api.write(w.owner, w.base, "conversation/two-more.md", "no")) == (422, "memory_full")
    assert len(w.listing()) == MAX_DOCS


def test_a_full_anchor_leaves_the_others_open(api: Api, w: World) -> None:
    # Given a conversation whose conversation/ root is full
    _fill(w, w.base, "conversation", MAX_DOCS)
    # When a workspace/ document is written through it, and a conversation/ one in a sibling conversation
    room = api.write(w.owner, w.base, "workspace/room.md", "the room")
    sibling = api.conversation(w.owner, w.ws)
    theirs = api.write(w.owner, conv_base(w.ws, sibling), "conversation/theirs.md", "x")
    # Then both fit: the bound is per anchor
    assert room.status_code == 201, room.text
    assert theirs.status_code == 201, theirs.text


def test_the_workspace_anchor_is_bounded_through_either_door(w: World) -> None:
    # Given a workspace anchor filled half through each door
    _fill(w, w.ws_base, "workspace/a", MAX_DOCS // 2)
    _fill(w, w.base, "workspace/b", MAX_DOCS // 2)
    revision = w.revision()
    # When one more is written through either door
    # Then both doors refuse memory_full, and the refused write bumps nothing
    assert code(w.api.write(w.owner, w.ws_base, "workspace/c.md", "x")) == (422, "memory_full")
    assert code(w.api.write(w.owner, w.base, "workspace/c.md", "x")) == (422, "memory_full")
    assert w.revision() == revision
    assert len(w.api.ls(w.owner, w.ws_base).json()["memory"]) == MAX_DOCS


# ---- memory_document_too_large ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "label"),
    [
        ("a" * MAX_BYTES, "ascii"),
        ("é" * (MAX_BYTES // 2), "two-byte"),
        ("😀" * (MAX_BYTES // 4), "four-byte"),
        ("€" * 21845 + "a", "three-byte"),
    ],
)
def test_exactly_64_kib_of_utf8_is_accepted(w: World, content: str, label: str) -> None:
    # Given content of exactly 65536 UTF-8 bytes
    assert len(content.encode("utf-8")) == MAX_BYTES, label
    # When it is written
    r = w.api.write(w.owner, w.base, "conversation/big.md", content)
    # Then it is stored whole and reported by its byte size
    assert r.status_code == 201, r.text
    assert r.json()["memory"]["bytesize"] == MAX_BYTES
    shown = w.shown("conversation/big.md")
    assert shown is not None and shown["content"] == content


@pytest.mark.parametrize(
    ("content", "label"),
    [
        ("a" * (MAX_BYTES + 1), "ascii"),
        ("é" * (MAX_BYTES // 2) + "a", "two-byte"),
        ("a" * (MAX_BYTES - 1) + "é", "one-multibyte-char-over"),
        ("😀" * (MAX_BYTES // 4 + 1), "four-byte"),
        ("€" * 30000, "fewer-chars-than-bytes"),
    ],
)
def test_more_than_64_kib_is_refused_counting_bytes(w: World, content: str, label: str) -> None:
    # Given a document, and content over 65536 UTF-8 bytes (some with fewer characters than that)
    assert len(content.encode("utf-8")) > MAX_BYTES, label
    made = w.api.write(w.owner, w.base, "conversation/big.md", "small")
    before = w.snapshot()
    # When the content is created at a new path, or replaces the document
    fresh = w.api.write(w.owner, w.base, "conversation/new.md", content)
    replace = w.api.write(w.owner, w.base, "conversation/big.md", content, pair(made))
    # Then both are refused, and nothing changed
    assert code(fresh) == (422, "memory_document_too_large"), fresh.text
    assert code(replace) == (422, "memory_document_too_large"), replace.text
    assert w.snapshot() == before


def test_an_edit_that_would_grow_past_64_kib_is_refused(w: World) -> None:
    # Given a document exactly at the bound
    made = w.api.write(w.owner, w.base, "conversation/big.md", "x" * (MAX_BYTES - 2) + "ab")
    assert made.status_code == 201
    before = w.snapshot()
    # When an edit would add a byte
    r = w.api.edit(w.owner, w.base, "conversation/big.md", "ab", "abc", pair(made))
    # Then it is refused, and the document is unchanged
    assert code(r) == (422, "memory_document_too_large"), r.text
    assert w.snapshot() == before
    # While an edit that keeps it at the bound is fine
    assert w.api.edit(w.owner, w.base, "conversation/big.md", "ab", "é", pair(made)).status_code == 200
