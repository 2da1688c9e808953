"""The conversation memory door over HTTP: every verb's shape, ordering and revision bump, as the seed says."""

from __future__ import annotations

import re

import pytest

from ..support import Api, code, conv_base, pair
from .world import DOC_KEYS, SHOW_KEYS, World, make_world

UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


@pytest.fixture
def w(api: Api) -> World:
    return make_world(api)


# ---- write and show ---------------------------------------------------------------------------------


def test_write_creates_a_document_in_the_show_shape(w: World) -> None:
    # Given an empty conversation
    # When a document is created with null/null
    r = w.api.write(w.owner, w.base, "conversation/plan.md", "the whole document")
    # Then 201 with exactly the show shape
    assert r.status_code == 201, r.text
    doc = r.json()["memory"]
    assert set(r.json()) == {"memory"}
    assert set(doc) == SHOW_KEYS
    assert doc["path"] == "conversation/plan.md"
    assert UUID7.match(doc["public_id"])
    assert doc["lock_version"] == 0
    assert doc["bytesize"] == 18
    assert doc["description"] is None
    assert doc["content"] == "the whole document"
    assert TIMESTAMP.match(doc["written_at"])


def test_show_returns_what_was_written(w: World) -> None:
    # Given a written document with multibyte text
    written = w.api.write(w.owner, w.base, "conversation/notes/ünïcode.md", "naïve café ☕\nline two\n").json()[
        "memory"
    ]
    # When it is shown
    r = w.api.show(w.owner, w.base, "conversation/notes/ünïcode.md")
    # Then the same document comes back, bytesize counting UTF-8 bytes
    assert r.status_code == 200, r.text
    assert r.json() == {"memory": written}
    assert written["bytesize"] == len("naïve café ☕\nline two\n".encode())


def test_an_empty_document_is_a_document(w: World) -> None:
    r = w.api.write(w.owner, w.base, "conversation/empty.md", "")
    assert r.status_code == 201, r.text
    assert r.json()["memory"]["bytesize"] == 0
    assert w.shown("conversation/empty.md") == r.json()["memory"]


def test_a_replace_answers_201_and_moves_the_version(w: World) -> None:
    # Given a document
    first = w.api.write(w.owner, w.base, "conversation/plan.md", "v1")
    # When it is replaced with the pair just read
    second = w.api.write(w.owner, w.base, "conversation/plan.md", "version two", pair(first))
    # Then 201 again: same public_id, the next lock_version, the new content
    assert second.status_code == 201, second.text
    doc = second.json()["memory"]
    assert doc["public_id"] == first.json()["memory"]["public_id"]
    assert doc["lock_version"] == 1
    assert doc["content"] == "version two" and doc["bytesize"] == 11
    assert w.shown("conversation/plan.md") == doc
    # And a third replace goes on counting
    third = w.api.write(w.owner, w.base, "conversation/plan.md", "v3", pair(second))
    assert pair(third) == (doc["public_id"], 2)


def test_show_of_an_absent_document_is_memory_not_found(w: World) -> None:
    r = w.api.show(w.owner, w.base, "conversation/nothing.md")
    assert code(r) == (404, "memory_not_found")
    assert "conversation/nothing.md" in r.json()["error"]["message"]
    assert code(w.api.show(w.owner, w.base, "workspace/nothing.md")) == (404, "memory_not_found")


# ---- list -------------------------------------------------------------------------------------------


def test_list_is_every_document_sorted_by_path_without_content(w: World) -> None:
    # Given documents in both roots, written out of order
    paths = [
        "workspace/b.md",
        "conversation/zeta.md",
        "conversation/notes/a.md",
        "workspace/a.md",
        "conversation/alpha.md",
        "conversation/notes.md",
    ]
    written = {}
    for p in paths:
        r = w.api.write(w.owner, w.base, p, f"content of {p}")
        assert r.status_code == 201, r.text
        written[p] = r.json()["memory"]
    # When the memory is listed
    r = w.api.ls(w.owner, w.base)
    # Then every document appears once, sorted by logical path, with no content
    assert r.status_code == 200, r.text
    assert set(r.json()) == {"memory"}
    rows = r.json()["memory"]
    assert [row["path"] for row in rows] == sorted(paths)
    for row in rows:
        assert set(row) == DOC_KEYS
        expected = {k: v for k, v in written[row["path"]].items() if k != "content"}
        assert row == expected


def test_list_of_an_empty_conversation_is_empty(w: World) -> None:
    r = w.api.ls(w.owner, w.base)
    assert r.status_code == 200 and r.json() == {"memory": []}


def test_list_shows_the_current_version(w: World) -> None:
    first = w.api.write(w.owner, w.base, "conversation/a.md", "one")
    second = w.api.write(w.owner, w.base, "conversation/a.md", "three", pair(first))
    (row,) = w.listing()
    assert row["lock_version"] == 1 and row["bytesize"] == 5
    assert row["written_at"] == second.json()["memory"]["written_at"]


# ---- edit -------------------------------------------------------------------------------------------


def test_edit_replaces_the_one_passage(w: World) -> None:
    # Given a document
    made = w.api.write(w.owner, w.base, "conversation/plan.md", "ship friday\nthen rest\n")
    # When one exact passage is replaced
    r = w.api.edit(w.owner, w.base, "conversation/plan.md", "friday", "on monday", pair(made))
    # Then 200 with the edited document in the show shape
    assert r.status_code == 200, r.text
    doc = r.json()["memory"]
    assert set(doc) == SHOW_KEYS
    assert doc["content"] == "ship on monday\nthen rest\n"
    assert doc["public_id"] == made.json()["memory"]["public_id"]
    assert doc["lock_version"] == 1
    assert doc["bytesize"] == len(doc["content"].encode())
    assert w.shown("conversation/plan.md") == doc


def test_edit_may_delete_a_passage_and_span_lines(w: World) -> None:
    made = w.api.write(w.owner, w.base, "conversation/plan.md", "keep\ndrop this\nand this\nkeep too")
    r = w.api.edit(w.owner, w.base, "conversation/plan.md", "drop this\nand this\n", "", pair(made))
    assert r.status_code == 200, r.text
    assert r.json()["memory"]["content"] == "keep\nkeep too"


def test_edit_takes_the_text_literally(w: World) -> None:
    # A passage with regex metacharacters is matched as text, not as a pattern.
    made = w.api.write(w.owner, w.base, "conversation/p.md", "cost: $5 (approx.) [tbd]")
    r = w.api.edit(w.owner, w.base, "conversation/p.md", "$5 (approx.)", "$6", pair(made))
    assert r.status_code == 200, r.text
    assert r.json()["memory"]["content"] == "cost: $6 [tbd]"


# ---- delete -----------------------------------------------------------------------------------------


def test_delete_answers_204_and_the_document_is_gone(w: World) -> None:
    # Given two documents
    doomed = w.api.write(w.owner, w.base, "conversation/plan.md", "bye")
    w.api.write(w.owner, w.base, "conversation/keep.md", "stay")
    # When one is deleted with its pair
    r = w.api.delete(w.owner, w.base, "conversation/plan.md", pair(doomed))
    # Then 204 with no body, and it is gone from show, list and grep
    assert r.status_code == 204, r.text
    assert r.content == b""
    assert code(w.api.show(w.owner, w.base, "conversation/plan.md")) == (404, "memory_not_found")
    assert [row["path"] for row in w.listing()] == ["conversation/keep.md"]
    assert w.api.grep(w.owner, w.base, "bye").json() == {"matches": [], "truncated": False, "truncated_reason": None}
    # And the path can be created afresh, as a new document
    again = w.api.write(w.owner, w.base, "conversation/plan.md", "back")
    assert again.status_code == 201
    assert again.json()["memory"]["public_id"] != doomed.json()["memory"]["public_id"]
    assert again.json()["memory"]["lock_version"] == 0


# ---- grep -------------------------------------------------------------------------------------------


def test_grep_matches_lines_ordered_by_path_then_line(w: World) -> None:
    # Given documents in both roots, written out of order, with matching and other lines
    w.api.write(w.owner, w.base, "workspace/team.md", "deadline: q3\nnothing\nthe deadline moved")
    w.api.write(w.owner, w.base, "conversation/z.md", "no\ndeadline z")
    w.api.write(w.owner, w.base, "conversation/a.md", "deadline a1\n\ndeadline a3\nDEADLINE upper")
    # When grepping for a word
    r = w.api.grep(w.owner, w.base, "deadline")
    # Then matches come in path order, then line order, with 1-based line numbers
    assert r.status_code == 200, r.text
    assert set(r.json()) == {"matches", "truncated", "truncated_reason"}
    assert r.json()["truncated"] is False
    assert r.json()["matches"] == [
        {"path": "conversation/a.md", "line_number": 1, "text": "deadline a1"},
        {"path": "conversation/a.md", "line_number": 3, "text": "deadline a3"},
        {"path": "conversation/z.md", "line_number": 2, "text": "deadline z"},
        {"path": "workspace/team.md", "line_number": 1, "text": "deadline: q3"},
        {"path": "workspace/team.md", "line_number": 3, "text": "the deadline moved"},
    ]


def test_grep_is_a_regular_expression_over_lines(w: World) -> None:
    w.api.write(w.owner, w.base, "conversation/a.md", "alpha 12\nbeta\nalpha x\n  alpha 7")
    r = w.api.grep(w.owner, w.base, r"^alpha \d+$")
    assert [m["line_number"] for m in r.json()["matches"]] == [1]


def test_grep_ignore_case(w: World) -> None:
    w.api.write(w.owner, w.base, "conversation/a.md", "Deadline\ndeadline\nDEADLINE\nnone")
    sensitive = w.api.grep(w.owner, w.base, "deadline")
    insensitive = w.api.grep(w.owner, w.base, "deadline", ignore_case=True)
    explicit = w.api.grep(w.owner, w.base, "deadline", ignore_case=False)
    assert [m["line_number"] for m in sensitive.json()["matches"]] == [2]
    assert [m["line_number"] for m in explicit.json()["matches"]] == [2]
    assert [m["line_number"] for m in insensitive.json()["matches"]] == [1, 2, 3]


def test_grep_caps_each_line_at_500_characters(w: World) -> None:
    # Given a document with one long line whose match lies past the cap, and one short line
    long_line = "x" * 700 + " needle"
    w.api.write(w.owner, w.base, "conversation/a.md", f"{long_line}\nneedle short")
    # When grepping
    matches = w.api.grep(w.owner, w.base, "needle").json()["matches"]
    # Then the long line is found but its text is its first 500 characters
    assert matches[0]["text"] == long_line[:500]
    assert len(matches[0]["text"]) == 500
    assert matches[1]["text"] == "needle short"


def test_grep_limit_defaults_to_100_and_flags_truncation(w: World) -> None:
    # Given 150 matching lines
    w.api.write(w.owner, w.base, "conversation/a.md", "\n".join(f"hit {i}" for i in range(150)))
    # When grepping without a limit
    body = w.api.grep(w.owner, w.base, "hit").json()
    # Then the first 100 come back and the result says it was cut
    assert len(body["matches"]) == 100
    assert body["matches"][-1]["line_number"] == 100
    assert body["truncated"] is True
    assert body["truncated_reason"] == "limit"


def test_grep_limit_bounds_and_exact_fit(w: World) -> None:
    # Given 600 matching lines across two documents
    w.api.write(w.owner, w.base, "conversation/a.md", "\n".join("hit" for _ in range(300)))
    w.api.write(w.owner, w.base, "conversation/b.md", "\n".join("hit" for _ in range(300)))
    # When grepping with the smallest and largest limits
    one = w.api.grep(w.owner, w.base, "hit", limit=1).json()
    most = w.api.grep(w.owner, w.base, "hit", limit=500).json()
    # Then each is honoured, and truncated says more existed
    assert len(one["matches"]) == 1 and one["truncated"] is True
    assert len(most["matches"]) == 500 and most["truncated"] is True
    assert most["matches"][299] == {"path": "conversation/a.md", "line_number": 300, "text": "hit"}
    assert most["matches"][300] == {"path": "conversation/b.md", "line_number": 1, "text": "hit"}
    # And a limit the matches exactly fill is not truncated
    exact = w.api.grep(w.owner, w.base, "hit", limit=500, path="conversation/a.md").json()
    assert len(exact["matches"]) == 300 and exact["truncated"] is False


def test_grep_limit_exactly_reached_is_not_truncated(w: World) -> None:
    w.api.write(w.owner, w.base, "conversation/a.md", "hit\nhit\nhit\nmiss")
    assert w.api.grep(w.owner, w.base, "hit", limit=3).json()["truncated"] is False
    cut = w.api.grep(w.owner, w.base, "hit", limit=2).json()
    assert len(cut["matches"]) == 2 and cut["truncated"] is True


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("workspace/", ["workspace/notes.md", "workspace/notes/deep/b.md"]),
        ("workspace", ["workspace/notes.md", "workspace/notes/deep/b.md"]),
        ("conversation/", ["conversation/notes.md", "conversation/notes/a.md", "conversation/notesx.md"]),
        ("conversation/notes/", ["conversation/notes/a.md"]),
        ("conversation/notes", ["conversation/notes/a.md"]),
        ("conversation/notes.md", ["conversation/notes.md"]),
        ("workspace/notes/deep", ["workspace/notes/deep/b.md"]),
        ("conversation/nothing/", []),
    ],
)
def test_grep_path_is_a_prefix_of_whole_segments(w: World, prefix: str, expected: list[str]) -> None:
    # Given matching documents in folders and siblings whose names share a prefix
    for p in [
        "conversation/notes.md",
        "conversation/notes/a.md",
        "conversation/notesx.md",
        "workspace/notes.md",
        "workspace/notes/deep/b.md",
    ]:
        w.api.write(w.owner, w.base, p, "needle")
    # When grepping under one prefix
    r = w.api.grep(w.owner, w.base, "needle", path=prefix)
    # Then only documents at or under it by whole segments match
    assert r.status_code == 200, r.text
    assert [m["path"] for m in r.json()["matches"]] == expected


def test_grep_of_nothing_is_empty(w: World) -> None:
    assert w.api.grep(w.owner, w.base, "x").json() == {"matches": [], "truncated": False, "truncated_reason": None}


# ---- the revision: every accepted change bumps it by one, reads by nothing ----------------------------


def test_every_accepted_change_bumps_the_revision_by_exactly_one(w: World) -> None:
    # Given a new conversation at revision 0
    assert w.revision() == 0
    # When each kind of change is accepted, in both roots, one after the other
    # Then each moves the revision by exactly one
    made = w.api.write(w.owner, w.base, "conversation/a.md", "one two")
    assert made.status_code == 201 and w.revision() == 1
    room = w.api.write(w.owner, w.base, "workspace/r.md", "room")
    assert room.status_code == 201 and w.revision() == 2
    replaced = w.api.write(w.owner, w.base, "conversation/a.md", "one two three", pair(made))
    assert replaced.status_code == 201 and w.revision() == 3
    edited = w.api.edit(w.owner, w.base, "conversation/a.md", "three", "3", pair(replaced))
    assert edited.status_code == 200 and w.revision() == 4
    hall = w.api.edit(w.owner, w.base, "workspace/r.md", "room", "hall", pair(room))
    assert hall.status_code == 200 and w.revision() == 5
    assert w.api.delete(w.owner, w.base, "conversation/a.md", pair(edited)).status_code == 204
    assert w.revision() == 6
    assert w.api.delete(w.owner, w.base, "workspace/r.md", pair(hall)).status_code == 204
    assert w.revision() == 7


def test_reads_bump_nothing(w: World) -> None:
    w.api.write(w.owner, w.base, "conversation/a.md", "x")
    before = w.revision()
    w.api.ls(w.owner, w.base)
    w.api.show(w.owner, w.base, "conversation/a.md")
    w.api.grep(w.owner, w.base, "x")
    w.api.show(w.owner, w.base, "conversation/none.md")
    assert w.revision() == before


def test_a_write_bumps_only_the_conversation_it_went_through(api: Api, w: World) -> None:
    # Given a second conversation in the same workspace
    other = api.conversation(w.owner, w.ws)
    # When a workspace/ document is written through the first conversation
    api.write(w.owner, w.base, "workspace/shared.md", "for everyone")
    # Then the first conversation's revision moved, the second's did not, yet both see the document
    assert w.revision() == 1
    assert w.revision(other) == 0
    seen = api.show(w.owner, conv_base(w.ws, other), "workspace/shared.md")
    assert seen.status_code == 200 and seen.json()["memory"]["content"] == "for everyone"
    # And the other conversation's conversation/ root is its own
    api.write(w.owner, w.base, "conversation/mine.md", "private")
    assert code(api.show(w.owner, conv_base(w.ws, other), "conversation/mine.md")) == (404, "memory_not_found")
