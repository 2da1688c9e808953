"""Every refusal of the conversation memory door over HTTP, and proof that a refusal changes nothing.

Each group sends its malformed or impossible requests at a conversation holding two documents, then
checks after every one that the revision, the listing and each document's content are as they were.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from ..support import Api, code, pair
from .world import World, make_world

PLAN = "conversation/plan.md"
PLAN_TEXT = "alpha beta beta\ngamma\n"
ROOM = "workspace/room.md"
ABSENT_ID = "01995000-0000-7000-8000-000000000001"


@dataclass
class Seeded:
    world: World
    plan: tuple[str, int]
    room: tuple[str, int]

    @property
    def api(self) -> Api:
        return self.world.api

    def post(self, suffix: str, body: Any) -> requests.Response:
        return self.api.post(f"{self.world.base}{suffix}", self.world.owner, body)


@pytest.fixture
def seeded(api: Api) -> Seeded:
    w = make_world(api)
    plan = api.write(w.owner, w.base, PLAN, PLAN_TEXT)
    room = api.write(w.owner, w.base, ROOM, "the room's note")
    assert plan.status_code == 201 and room.status_code == 201
    return Seeded(w, pair(plan), pair(room))


Case = Callable[[Seeded], requests.Response]


def _write(s: Seeded, **memory: Any) -> requests.Response:
    return s.post("", {"memory": memory})


def _full_write(
    s: Seeded, path: Any = PLAN, content: Any = "new", expected: tuple[Any, Any] | None = None, **extra: Any
) -> requests.Response:
    pid, lv = expected if expected is not None else s.plan
    return _write(s, path=path, content=content, expected_public_id=pid, expected_lock_version=lv, **extra)


def _full_edit(
    s: Seeded, path: Any = PLAN, old: Any = "gamma", new: Any = "delta", expected: tuple[Any, Any] | None = None
) -> requests.Response:
    pid, lv = expected if expected is not None else s.plan
    return s.post(
        "/edit",
        {
            "memory": {
                "path": path,
                "old_text": old,
                "new_text": new,
                "expected_public_id": pid,
                "expected_lock_version": lv,
            }
        },
    )


def _full_delete(s: Seeded, path: Any = PLAN, expected: tuple[Any, Any] | None = None) -> requests.Response:
    pid, lv = expected if expected is not None else s.plan
    return s.post("/delete", {"memory": {"path": path, "expected_public_id": pid, "expected_lock_version": lv}})


def _grep(s: Seeded, **memory: Any) -> requests.Response:
    return s.post("/grep", {"memory": {"pattern": "beta", **memory}})


def _run_group(seeded: Seeded, status: int, expected: str, cases: dict[str, Case]) -> None:
    w = seeded.world
    before = w.snapshot()
    for label, case in cases.items():
        r = case(seeded)
        assert code(r) == (status, expected), f"{label}: {r.status_code} {r.text}"
        message = r.json()["error"]["message"]
        assert isinstance(message, str) and len(message) > 10, label
        assert w.state() == before[:2], f"{label} changed something"
    assert w.snapshot() == before


# ---- 400 parameter_missing ---------------------------------------------------------------------------

MISSING: dict[str, Case] = {
    "write: no memory object": lambda s: s.post("", {}),
    "show: no memory object": lambda s: s.post("/show", {}),
    "delete: no memory object": lambda s: s.post("/delete", {}),
    "write: no body at all": lambda s: s.post("", None),
    "write: no path": lambda s: _write(s, content="x", expected_public_id=None, expected_lock_version=None),
    "show: no path": lambda s: s.post("/show", {"memory": {}}),
    "edit: no path": lambda s: s.post(
        "/edit",
        {"memory": {"old_text": "a", "new_text": "b", "expected_public_id": s.plan[0], "expected_lock_version": 0}},
    ),
    "delete: no path": lambda s: s.post(
        "/delete", {"memory": {"expected_public_id": s.plan[0], "expected_lock_version": 0}}
    ),
    "write: no expected_public_id": lambda s: _write(
        s, path="conversation/n.md", content="x", expected_lock_version=None
    ),
    "write: no expected_lock_version": lambda s: _write(
        s, path="conversation/n.md", content="x", expected_public_id=None
    ),
    "write: no expected keys at all": lambda s: _write(s, path="conversation/n.md", content="x"),
    "replace: no expected_lock_version": lambda s: _write(s, path=PLAN, content="x", expected_public_id=s.plan[0]),
    "edit: no expected_public_id": lambda s: s.post(
        "/edit", {"memory": {"path": PLAN, "old_text": "gamma", "new_text": "d", "expected_lock_version": 0}}
    ),
    "edit: no expected_lock_version": lambda s: s.post(
        "/edit", {"memory": {"path": PLAN, "old_text": "gamma", "new_text": "d", "expected_public_id": s.plan[0]}}
    ),
    "delete: no expected_public_id": lambda s: s.post(
        "/delete", {"memory": {"path": PLAN, "expected_lock_version": 0}}
    ),
    "delete: no expected_lock_version": lambda s: s.post(
        "/delete", {"memory": {"path": PLAN, "expected_public_id": s.plan[0]}}
    ),
    "write: no content": lambda s: _write(s, path=PLAN, expected_public_id=s.plan[0], expected_lock_version=0),
    "edit: no old_text": lambda s: s.post(
        "/edit",
        {"memory": {"path": PLAN, "new_text": "d", "expected_public_id": s.plan[0], "expected_lock_version": 0}},
    ),
    "edit: no new_text": lambda s: s.post(
        "/edit",
        {"memory": {"path": PLAN, "old_text": "gamma", "expected_public_id": s.plan[0], "expected_lock_version": 0}},
    ),
    "grep: no pattern": lambda s: s.post("/grep", {"memory": {"path": "conversation/"}}),
}


def test_parameter_missing(seeded: Seeded) -> None:
    # Given a conversation with documents
    # When a request leaves out the memory object, the path, a condition key or another required field
    # Then each is 400 parameter_missing and nothing changes
    _run_group(seeded, 400, "parameter_missing", MISSING)


# ---- 400 parameter_invalid ---------------------------------------------------------------------------

INVALID: dict[str, Case] = {
    # A field outside its object is named where it belongs (once silently ignored, then "memory is required")
    "edit: path outside the memory object": lambda s: s.post("/edit", {"path": PLAN}),
    "grep: pattern outside the memory object": lambda s: s.post("/grep", {"pattern": "x"}),
    "memory is a string": lambda s: s.post("", {"memory": "conversation/plan.md"}),
    "memory is a list": lambda s: s.post("/show", {"memory": [PLAN]}),
    "expected_public_id not a uuid": lambda s: _full_write(s, expected=("plan", 0)),
    "expected_public_id uppercase": lambda s: _full_write(s, expected=(s.plan[0].upper(), 0)),
    "expected_public_id a number": lambda s: _full_write(s, expected=(42, 0)),
    "expected_public_id braced": lambda s: _full_write(s, expected=("{" + s.plan[0] + "}", 0)),
    "expected_public_id empty": lambda s: _full_write(s, expected=("", 0)),
    "lock version negative": lambda s: _full_write(s, expected=(s.plan[0], -1)),
    "lock version true": lambda s: _full_write(s, expected=(s.plan[0], True)),
    "lock version false": lambda s: _full_write(s, expected=(s.plan[0], False)),
    "lock version a string": lambda s: _full_write(s, expected=(s.plan[0], "0")),
    "lock version a float": lambda s: _full_write(s, expected=(s.plan[0], 0.5)),
    # Past DynamoDB's 38 digits: once a 500 from the store, now refused as the malformed value it is.
    "lock version 10**40": lambda s: _full_write(s, expected=(s.plan[0], 10**40)),
    "lock version past 2**53": lambda s: _full_write(s, expected=(s.plan[0], 2**53 + 1)),
    "edit lock version 10**40": lambda s: _full_edit(s, expected=(s.plan[0], 10**40)),
    "edit lock version negative": lambda s: _full_edit(s, expected=(s.plan[0], -1)),
    "delete lock version a string": lambda s: _full_delete(s, expected=(s.plan[0], "0")),
    "pair: id with null version": lambda s: _full_write(s, expected=(s.plan[0], None)),
    "pair: null id with version": lambda s: _full_write(s, expected=(None, 0)),
    "edit pair: null id with version": lambda s: _full_edit(s, expected=(None, 0)),
    "delete pair: id with null version": lambda s: _full_delete(s, expected=(s.plan[0], None)),
    "edit with null/null": lambda s: _full_edit(s, expected=(None, None)),
    "delete with null/null": lambda s: _full_delete(s, expected=(None, None)),
    "edit old_text empty": lambda s: _full_edit(s, old=""),
    "edit old_text a number": lambda s: _full_edit(s, old=5),
    "grep limit 0": lambda s: _grep(s, limit=0),
    "grep limit 501": lambda s: _grep(s, limit=501),
    "grep limit -1": lambda s: _grep(s, limit=-1),
    "grep limit a string": lambda s: _grep(s, limit="5"),
    "grep limit true": lambda s: _grep(s, limit=True),
    "grep limit a float": lambda s: _grep(s, limit=2.5),
    "grep limit huge": lambda s: _grep(s, limit=10**30),
    "grep invalid regex (": lambda s: _grep(s, pattern="("),
    "grep invalid regex [": lambda s: _grep(s, pattern="[a-"),
    "grep invalid regex bad repeat": lambda s: _grep(s, pattern="*beta"),
    "grep pattern empty": lambda s: _grep(s, pattern=""),
    "grep pattern a number": lambda s: _grep(s, pattern=5),
    "grep pattern null": lambda s: _grep(s, pattern=None),
    "grep ignore_case a string": lambda s: _grep(s, ignore_case="yes"),
    "grep path a number": lambda s: _grep(s, path=5),
    "body not json": lambda s: s.api.http.post(
        f"{s.api.url}/agent_api/v1{s.world.base}",
        data="{memory:",
        timeout=30,
        headers={"Authorization": f"Bearer {s.world.owner.token}", "Content-Type": "application/json"},
    ),
    # Python's json refuses integers past 4300 digits with a plain ValueError: once a 500.
    "body with a 5000-digit number": lambda s: s.api.http.post(
        f"{s.api.url}/agent_api/v1{s.world.base}/grep",
        data='{"memory":{"pattern":"a","limit":' + "1" * 5000 + "}}",
        timeout=30,
        headers={"Authorization": f"Bearer {s.world.owner.token}", "Content-Type": "application/json"},
    ),
    "body a json array": lambda s: s.api.http.post(
        f"{s.api.url}/agent_api/v1{s.world.base}/show",
        data="[]",
        timeout=30,
        headers={"Authorization": f"Bearer {s.world.owner.token}", "Content-Type": "application/json"},
    ),
}


def test_parameter_invalid(seeded: Seeded) -> None:
    # Given a conversation with documents
    # When a condition, a grep limit, a pattern or the body itself is malformed
    # Then each is 400 parameter_invalid and nothing changes
    _run_group(seeded, 400, "parameter_invalid", INVALID)


def test_a_catastrophic_pattern_is_answered_truncated_at_the_deadline(seeded: Seeded) -> None:
    # Given documents full of lines that make a backtracking pattern explode
    w = seeded.world
    hostile = "\n".join("a" * 30 + "b" for _ in range(200))
    for i in range(3):
        assert w.api.write(w.owner, w.base, f"conversation/hostile{i}.md", hostile).status_code == 201
    before = w.snapshot()
    # When grepping with a pattern whose matching time is exponential
    started = time.monotonic()
    r = w.api.grep(w.owner, w.base, "(a|a)+$")
    elapsed = time.monotonic() - started
    # Then it compiled within its bounds, so it gets an answer: 200, truncated at the request's deadline
    # (issue 10: only a pattern refused at compile time is 400)
    assert r.status_code == 200, r.text
    assert r.json() == {"matches": [], "truncated": True, "truncated_reason": "deadline"}
    # Unbounded, this pattern backtracks 2**30 times per line: minutes, not seconds.
    assert elapsed < 5.0, f"the hostile grep took {elapsed:.2f}s"
    # And the service still answers, and nothing changed
    assert w.api.grep(w.owner, w.base, "beta").status_code == 200
    assert w.snapshot() == before


# ---- 404 memory_not_found ----------------------------------------------------------------------------


def test_memory_not_found(seeded: Seeded) -> None:
    _run_group(
        seeded,
        404,
        "memory_not_found",
        {
            "absent conversation document": lambda s: s.post("/show", {"memory": {"path": "conversation/nope.md"}}),
            "absent workspace document": lambda s: s.post("/show", {"memory": {"path": "workspace/nope.md"}}),
            "a folder is not a document": lambda s: s.post("/show", {"memory": {"path": "conversation/plan"}}),
            "case matters": lambda s: s.post("/show", {"memory": {"path": "conversation/PLAN.md"}}),
        },
    )


# ---- 409 stale_object --------------------------------------------------------------------------------

STALE: dict[str, Case] = {
    "create over an existing document": lambda s: _full_write(s, expected=(None, None)),
    "replace with a future version": lambda s: _full_write(s, expected=(s.plan[0], 1)),
    "replace with another document's id": lambda s: _full_write(s, expected=(s.room[0], 0)),
    "replace with an unknown id": lambda s: _full_write(s, expected=(ABSENT_ID, 0)),
    "replace of a missing document": lambda s: _full_write(s, path="conversation/none.md"),
    "edit with a future version": lambda s: _full_edit(s, expected=(s.plan[0], 7)),
    "edit with an unknown id": lambda s: _full_edit(s, expected=(ABSENT_ID, 0)),
    "edit of a missing document": lambda s: _full_edit(s, path="conversation/none.md"),
    # A stale view refuses before matching, so a passage that is not there is not the error reported.
    "stale edit whose passage is absent": lambda s: _full_edit(s, old="nowhere", expected=(s.plan[0], 3)),
    "stale edit whose passage is ambiguous": lambda s: _full_edit(s, old="beta", expected=(s.plan[0], 3)),
    "delete with a future version": lambda s: _full_delete(s, expected=(s.plan[0], 1)),
    "delete with an unknown id": lambda s: _full_delete(s, expected=(ABSENT_ID, 0)),
    "delete of a missing document": lambda s: _full_delete(s, path="conversation/none.md"),
    "workspace create over existing": lambda s: _full_write(s, path=ROOM, expected=(None, None)),
    "workspace delete with plan's pair": lambda s: _full_delete(s, path=ROOM),
}


def test_stale_object(seeded: Seeded) -> None:
    # Given a conversation with documents
    # When a write, edit or delete carries a condition that does not match the stored row
    # Then each is 409 stale_object and nothing changes
    _run_group(seeded, 409, "stale_object", STALE)


def test_an_outdated_pair_is_stale_after_a_replace(seeded: Seeded) -> None:
    # Given a document replaced once, so the pair first read is outdated
    w = seeded.world
    newer = _full_write(seeded, content="second")
    assert newer.status_code == 201
    before = w.snapshot()
    # When the outdated pair is used for a replace, an edit and a delete
    attempts = [_full_write(seeded, content="third"), _full_edit(seeded, old="second"), _full_delete(seeded)]
    # Then each is stale, and the document is still the second version
    for r in attempts:
        assert code(r) == (409, "stale_object"), r.text
    assert w.snapshot() == before
    assert w.shown(PLAN) == newer.json()["memory"]


def test_a_recreated_document_refuses_the_old_pair(seeded: Seeded) -> None:
    # Given a document deleted and created again at the same path (lock_version 0 both times)
    w = seeded.world
    old_pair = seeded.plan
    assert _full_delete(seeded).status_code == 204
    again = w.api.write(w.owner, w.base, PLAN, PLAN_TEXT)
    assert again.status_code == 201
    assert pair(again)[1] == old_pair[1] and pair(again)[0] != old_pair[0]
    before = w.snapshot()
    # When the pair of the first incarnation is used
    attempts = [
        _full_write(seeded, content="hijack", expected=old_pair),
        _full_edit(seeded, expected=old_pair),
        _full_delete(seeded, expected=old_pair),
    ]
    # Then each is stale: a version number alone never identifies the row
    for r in attempts:
        assert code(r) == (409, "stale_object"), r.text
    assert w.snapshot() == before
    # And the new pair works
    assert _full_edit(seeded, expected=pair(again)).status_code == 200


# ---- 409 conversation_archived -----------------------------------------------------------------------


def test_an_archived_conversation_refuses_changes_but_serves_reads(seeded: Seeded) -> None:
    # Given a conversation with documents, archived
    w = seeded.world
    revision = w.revision()
    archived = w.api.post(f"/workspaces/{w.ws}/conversations/{w.conv}/archive", w.owner)
    assert archived.status_code == 200, archived.text
    # Then archiving bumped no revision
    assert w.revision() == revision
    before = w.snapshot()
    # When it is written, edited or deleted, in either root, even with a perfect condition
    _run_group(
        seeded,
        409,
        "conversation_archived",
        {
            "create": lambda s: _full_write(s, path="conversation/new.md", expected=(None, None)),
            "replace": lambda s: _full_write(s),
            "edit": lambda s: _full_edit(s),
            "delete": lambda s: _full_delete(s),
            "workspace create": lambda s: _full_write(s, path="workspace/new.md", expected=(None, None)),
            "workspace replace": lambda s: _full_write(s, path=ROOM, expected=s.room),
            "workspace delete": lambda s: _full_delete(s, path=ROOM, expected=s.room),
        },
    )
    # Then reads still work
    assert w.snapshot() == before
    assert w.api.grep(w.owner, w.base, "beta").json()["matches"][0]["path"] == PLAN
    # And the workspace's own door still writes the room's documents
    assert w.api.write(w.owner, w.ws_base, "workspace/after.md", "still open").status_code == 201
    assert w.revision() == revision


# ---- 422 memory_path_invalid -------------------------------------------------------------------------

BAD_PATHS: dict[str, Any] = {
    "bare name": "plan.md",
    "bare scope word": "conversation",
    "scope and slash only": "conversation/",
    "unknown root": "notes/plan.md",
    "uppercase root": "Conversation/plan.md",
    "leading slash": "/conversation/plan.md",
    "dot-dot": "conversation/../workspace/plan.md",
    "dot-dot at end": "conversation/notes/..",
    "dot segment": "conversation/./plan.md",
    "empty segment": "conversation/notes//plan.md",
    "trailing slash": "conversation/notes/",
    "backslash": "conversation\\plan.md",
    "backslash in a segment": "conversation/notes\\plan.md",
    "nul": "conversation/pl\x00an.md",
    "newline": "conversation/plan\n.md",
    "tab": "conversation/pl\tan.md",
    "delete char": "conversation/plan\x7f.md",
    "leading space in a segment": "conversation/ plan.md",
    "too long": "conversation/" + "a" * 1100,
    "a number": 42,
    "null": None,
    "a list": ["conversation", "plan.md"],
    "an object": {"root": "conversation"},
    "boolean": True,
}


def _apply(make: Callable[[Seeded, Any], requests.Response], path: Any, s: Seeded) -> requests.Response:
    return make(s, path)


@pytest.mark.parametrize("verb", ["write", "show", "edit", "delete"])
def test_memory_path_invalid(seeded: Seeded, verb: str) -> None:
    # Given a conversation with documents
    # When a verb names a path outside the grammar
    # Then each is 422 memory_path_invalid and nothing changes
    makers: dict[str, Callable[[Seeded, Any], requests.Response]] = {
        "write": lambda s, p: _full_write(s, path=p, expected=(None, None)),
        "show": lambda s, p: s.post("/show", {"memory": {"path": p}}),
        "edit": lambda s, p: _full_edit(s, path=p),
        "delete": lambda s, p: _full_delete(s, path=p),
    }
    make = makers[verb]
    cases: dict[str, Case] = {label: functools.partial(_apply, make, p) for label, p in BAD_PATHS.items()}
    _run_group(seeded, 422, "memory_path_invalid", cases)


def test_grep_path_outside_the_grammar(seeded: Seeded) -> None:
    _run_group(
        seeded,
        422,
        "memory_path_invalid",
        {
            "unknown root": lambda s: _grep(s, path="notes/"),
            "dot-dot": lambda s: _grep(s, path="conversation/../workspace"),
            "empty segment": lambda s: _grep(s, path="conversation//x"),
            "backslash": lambda s: _grep(s, path="conversation/a\\b"),
        },
    )


# ---- 422 memory_edit_not_found / memory_edit_ambiguous ----------------------------------------------


def test_edit_passage_absent_or_repeated_leaves_the_document(seeded: Seeded) -> None:
    # Given a document where "beta" occurs twice and "gamma" once
    w = seeded.world
    original = w.shown(PLAN)
    assert original is not None
    # When the passage occurs nowhere
    _run_group(
        seeded,
        422,
        "memory_edit_not_found",
        {
            "absent": lambda s: _full_edit(s, old="omega"),
            "case differs": lambda s: _full_edit(s, old="GAMMA"),
            "passage longer than the document": lambda s: _full_edit(s, old=PLAN_TEXT + "more"),
        },
    )
    # And when it occurs more than once (overlapping occurrences count too)
    _run_group(
        seeded,
        422,
        "memory_edit_ambiguous",
        {
            "twice": lambda s: _full_edit(s, old="beta"),
            "a shared letter": lambda s: _full_edit(s, old="a"),
        },
    )
    # Then the document is the one first written: same content, same version
    after = w.shown(PLAN)
    assert after == original
    assert after is not None and after["lock_version"] == 0 and after["content"] == PLAN_TEXT
    # And a passage made unique by its context edits as asked
    r = _full_edit(seeded, old="beta beta", new="beta")
    assert r.status_code == 200 and r.json()["memory"]["content"] == "alpha beta\ngamma\n"


def test_overlapping_occurrences_are_ambiguous(api: Api) -> None:
    w = make_world(api)
    made = api.write(w.owner, w.base, "conversation/a.md", "aaa")
    r = api.edit(w.owner, w.base, "conversation/a.md", "aa", "b", pair(made))
    assert code(r) == (422, "memory_edit_ambiguous")
    assert w.shown("conversation/a.md") == made.json()["memory"]


# ---- 422 memory_content_invalid ----------------------------------------------------------------------


def test_memory_content_invalid(seeded: Seeded) -> None:
    _run_group(
        seeded,
        422,
        "memory_content_invalid",
        {
            "create with a number": lambda s: _full_write(
                s, path="conversation/n.md", content=42, expected=(None, None)
            ),
            "create with an object": lambda s: _full_write(
                s, path="conversation/n.md", content={"text": "x"}, expected=(None, None)
            ),
            "create with null": lambda s: _full_write(s, path="conversation/n.md", content=None, expected=(None, None)),
            "create with a list": lambda s: _full_write(
                s, path="conversation/n.md", content=["x"], expected=(None, None)
            ),
            "create with true": lambda s: _full_write(s, path="conversation/n.md", content=True, expected=(None, None)),
            "replace with a number": lambda s: _full_write(s, content=3.5),
            "workspace replace with an object": lambda s: _full_write(s, path=ROOM, content={}, expected=s.room),
            "edit new_text a number": lambda s: _full_edit(s, new=7),
            "edit new_text null": lambda s: _full_edit(s, new=None),
        },
    )
