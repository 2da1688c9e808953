"""Every route that names an organization Memory, against a Memory the Access panel hides from the caller.

Carol's Memory `secret-plans` is restricted to herself (its creator; the account's first Human reaches it
too). She stewards the program agent `alpha`, attaches the Memory to it read-write and read first, and
alpha answers a room where Bob, another Human of the account, is a member. Bob is outside the panel, so
he must learn nothing of it on any route: every route with `{memory_id}` answers him exactly as it answers
for an id that names no Memory at all (404), and everything that lists Memories (the listing, an agent's
detail and its Memories, the map and its page, an execution's mounts, files, block and tools) leaves it
out. The routes are read from the contract: a new route naming a Memory fails this file until it is
given a case here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from agent_memory.api.contract import ROUTES

from ..support import Api, Who, code
from .orgmem import Memories, ro, rw

pytestmark = pytest.mark.http

PREFIX = "/agent_api/v1"
NAME = "secret-plans"
TEXT = "the launch is on the 9th\n"
NOBODY = "mem_" + "0" * 32
UUID = "0193f0c2-a1b2-7c4e-8f5d-6a7b8c9d0e1f"
PAIR = {"expected_public_id": UUID, "expected_lock_version": 0}

# Each route whose path names a Memory, with a well-formed body (so only the Memory decides the answer).
BY_ID: dict[str, dict[str, Any] | None] = {
    "show_memory": None,
    "update_memory": {"memory": {"description": "mine now"}},
    "archive_memory": None,
    "delete_memory": None,
    "sync_memory": None,
    "memory_files_list": None,
    "memory_file_write": {"file": {"path": "notes.md", "content": "x", **PAIR}},
    "memory_file_show": {"file": {"path": "notes.md"}},
    "memory_file_edit": {"file": {"path": "notes.md", "old_text": "launch", "new_text": "x", **PAIR}},
    "memory_file_delete": {"file": {"path": "notes.md", **PAIR}},
    "memory_file_grep": {"file": {"pattern": "launch"}},
    "memory_file_versions": {"file": {"path": "notes.md"}},
    "memory_file_version_show": {"file": {"path": "notes.md", "lock_version": 0}},
    "memory_file_rollback": {"file": {"path": "notes.md", "lock_version": 0, **PAIR}},
    "memory_file_lease": {"file": {"path": "notes.md", "seconds": 30}},
    "memory_file_version_redact": {"file": {"path": "notes.md", "lock_version": 0, **PAIR}},
}
# Routes that name a Memory without an id in their path (in a body, or in what they list): each has its
# own test below.
THROUGH = {
    "list_memories": "test_listings_and_the_map_leave_it_out",
    "memory_map": "test_listings_and_the_map_leave_it_out",
    "memory_map_page": "test_listings_and_the_map_leave_it_out",
    "show_agent": "test_an_agents_detail_and_memories_leave_it_out",
    "agent_memories": "test_an_agents_detail_and_memories_leave_it_out",
    "update_agent": "test_attaching_it_is_refused_as_unknown_and_an_unseen_attachment_is_kept",
    "create_memory": "test_creating_or_promoting_with_it_is_refused_as_unknown",
    "promote_memory": "test_creating_or_promoting_with_it_is_refused_as_unknown",
    "create_execution": "test_an_execution_of_its_agent_mounts_none_of_it",
    "execution_mounts": "test_an_execution_of_its_agent_mounts_none_of_it",
    "execution_memory_block": "test_an_execution_of_its_agent_mounts_none_of_it",
    "execution_files_list": "test_an_execution_of_its_agent_mounts_none_of_it",
    "execution_file_show": "test_an_execution_of_its_agent_mounts_none_of_it",
    "execution_file_write": "test_an_execution_of_its_agent_mounts_none_of_it",
    "execution_file_edit": "test_an_execution_of_its_agent_mounts_none_of_it",
    "execution_file_delete": "test_an_execution_of_its_agent_mounts_none_of_it",
    "execution_file_rename": "test_an_execution_of_its_agent_mounts_none_of_it",
    "call_tool": "test_an_execution_of_its_agent_mounts_none_of_it",
}
# Routes whose names suggest a Memory but which name none: the scoped memory doors (documents, not
# organization Memories) and these.
NAMES_NONE = {
    "replace_memory_context",  # bindings of conversation scopes
    "create_agent",  # takes no attachments
    "rotate_agent_credentials",
    "stop_execution",
    "tool_schemas",
}
_SCOPED_DOOR = re.compile(r"^(conversation|workspace|profile|definition)_memory_")
_SUGGESTS = re.compile(r"memor|agent|execution|mount|tool|file")


def test_every_route_that_names_a_memory_has_a_case_here() -> None:
    by_id = {r.name for r in ROUTES if "{memory_id}" in r.path}
    assert by_id == set(BY_ID), "a route naming a Memory by id needs a body in BY_ID"
    suggests = {
        r.name
        for r in ROUTES
        if "{memory_id}" not in r.path and not _SCOPED_DOOR.match(r.name) and _SUGGESTS.search(r.name)
    }
    assert suggests == set(THROUGH) | NAMES_NONE, "classify the new route: THROUGH (with a test) or NAMES_NONE"
    tests = {name for name in globals() if name.startswith("test_")}
    assert set(THROUGH.values()) <= tests


@dataclass
class World:
    api: Api
    mems: Memories
    ada: Who
    carol: Who
    bob: Who
    dan: Who
    alpha: Who
    ws: str
    conv: str
    secret: str
    open: str

    def ask(self, who: Who, route: str, memory_id: str, body: dict[str, Any] | None) -> requests.Response:
        (r,) = [x for x in ROUTES if x.name == route]
        path = r.path.removeprefix(PREFIX).replace("{memory_id}", memory_id)
        return self.api.call(r.method, path, who, body)


@pytest.fixture
def w(api: Api) -> World:
    mems = Memories(api)
    ada = api.account()
    carol = api.human(ada, "carol")
    bob = api.human(ada, "bob")
    dan = api.human(ada, "dan")
    secret = mems.made(
        carol, NAME, files=[{"path": "notes.md", "content": TEXT}], access={"humans": [], "workspaces": []}
    )["memory_id"]
    opened = mems.made(ada, "open-notes", files=[{"path": "open.md", "content": "hello\n"}])["memory_id"]
    alpha = api.agent(carol, "alpha")
    r = mems.attach(carol, alpha.public_id, [rw(secret), ro(opened)])
    assert r.status_code == 200, r.text
    ws = api.workspace(ada)
    api.member(ada, ws, bob)
    api.member(ada, ws, alpha)
    conv = api.conversation(ada, ws, answering_agent_public_id=alpha.public_id)
    return World(api, mems, ada, carol, bob, dan, alpha, ws, conv, secret, opened)


def _same_as_nothing(w: World, route: str, body: dict[str, Any] | None) -> None:
    hidden = w.ask(w.bob, route, w.secret, body)
    absent = w.ask(w.bob, route, NOBODY, body)
    assert code(hidden) == (404, "not_found"), (route, hidden.text)
    assert code(hidden) == code(absent), route
    assert hidden.json()["error"]["message"] == absent.json()["error"]["message"].replace(NOBODY, w.secret)
    assert NAME not in hidden.text and "launch" not in hidden.text


@pytest.mark.parametrize("route", sorted(BY_ID))
def test_a_route_naming_it_answers_as_for_no_memory_at_all(w: World, route: str) -> None:
    _same_as_nothing(w, route, BY_ID[route])
    # And the one who reaches it is answered (the case is real: only the panel made the difference)
    if route == "memory_file_show":
        assert w.ask(w.carol, route, w.secret, BY_ID[route]).json()["file"]["content"] == TEXT
    # And nothing changed for those who see it
    assert w.mems.content(w.carol, w.secret, "notes.md") == TEXT


def test_listings_and_the_map_leave_it_out(w: World) -> None:
    listed = w.mems.listing(w.bob)
    assert listed.status_code == 200 and [m["memory_id"] for m in listed.json()["memories"]] == [w.open]
    graph = w.api.get("/memory_map", w.bob)
    assert graph.status_code == 200, graph.text
    assert w.secret not in graph.text and NAME not in graph.text
    # alpha is drawn (bob sees its other Memory's attachment), with no edge to the hidden one
    assert {e["from"] for e in graph.json()["edges"]} == {w.open}
    page = w.api.get("/memory_map.html", w.bob)
    assert page.status_code == 200 and w.secret not in page.text and NAME not in page.text
    # While Carol's map has it
    assert w.secret in w.api.get("/memory_map", w.carol).text


def test_an_agents_detail_and_memories_leave_it_out(w: World) -> None:
    for who in (w.bob, w.dan):
        detail = w.api.get(f"/agents/{w.alpha.public_id}", who)
        assert detail.status_code == 200, detail.text
        assert [m["memory_id"] for m in detail.json()["agent"]["memories"]] == [w.open]
        listed = w.api.get(f"/agents/{w.alpha.public_id}/memories", who)
        assert listed.status_code == 200, listed.text
        assert [m["memory_id"] for m in listed.json()["memories"]] == [w.open]
        assert w.secret not in detail.text + listed.text and NAME not in detail.text + listed.text
    # Carol, who reaches it, and the agent itself, see both
    for who in (w.carol, w.alpha):
        ids = [m["memory_id"] for m in w.api.get(f"/agents/{w.alpha.public_id}/memories", who).json()["memories"]]
        assert ids == [w.secret, w.open]


def test_attaching_it_is_refused_as_unknown_and_an_unseen_attachment_is_kept(w: World) -> None:
    # Bob is not alpha's steward: refused without a word of its Memories
    r = w.mems.attach(w.bob, w.alpha.public_id, [])
    assert code(r) == (403, "not_authorized") and w.secret not in r.text
    # Dan stewards an agent and tries to attach the hidden Memory: refused as for an unknown id
    helper = w.api.agent(w.dan, "helper")
    hidden = w.mems.attach(w.dan, helper.public_id, [ro(w.secret)])
    absent = w.mems.attach(w.dan, helper.public_id, [ro(NOBODY)])
    assert code(hidden) == code(absent) == (422, "validation_failed")
    assert hidden.json()["error"]["message"] == absent.json()["error"]["message"].replace(NOBODY, w.secret)
    # An attachment Dan made while the Memory was open stays when the panel closes it to him: he no longer
    # sees it, and a list he sends (even an empty one) cannot detach what he cannot see
    shared = w.mems.made(w.carol, "was-open", files=[{"path": "a.md", "content": "a\n"}])["memory_id"]
    assert w.mems.attach(w.dan, helper.public_id, [ro(shared)]).status_code == 200
    closed = w.mems.patch(w.carol, shared, access={"humans": [], "workspaces": []})
    assert closed.status_code == 200, closed.text
    r = w.mems.attach(w.dan, helper.public_id, [ro(w.open)])
    assert r.status_code == 200, r.text
    assert [m["memory_id"] for m in r.json()["agent"]["memories"]] == [w.open]
    assert shared not in r.text
    assert [m["memory_id"] for m in w.mems.attached(w.carol, helper.public_id)] == [w.open, shared]


def test_creating_or_promoting_with_it_is_refused_as_unknown(w: World) -> None:
    def promote(mem: str) -> requests.Response:
        source = {"memory_id": mem, "path": "notes.md", "lock_version": 0}
        return w.mems.api.post("/memories/promote", w.bob, {"promote": {"source": source, "name": "copied"}})

    hidden, absent = promote(w.secret), promote(NOBODY)
    assert code(hidden) == code(absent) and hidden.status_code == 404, hidden.text
    assert hidden.json()["error"]["message"] == absent.json()["error"]["message"].replace(NOBODY, w.secret)
    # A new Memory's name is the account's: the taken name is refused (names are claims, not content), and
    # nothing of the hidden Memory is told
    r = w.mems.create(w.bob, NAME)
    assert r.status_code in (201, 409, 422), r.text
    assert w.secret not in r.text and "launch" not in r.text


def test_an_execution_of_its_agent_mounts_none_of_it(w: World) -> None:
    # Bob starts alpha's execution in the room: alpha's hidden Memory is not mounted for him
    start = w.api.post(f"/workspaces/{w.ws}/conversations/{w.conv}/executions", w.bob, {"execution": {}})
    assert start.status_code == 201, start.text
    ex = start.json()["execution"]
    assert w.secret not in start.text and NAME not in start.text
    url = f"/executions/{ex['public_id']}"
    mounts = w.api.get(f"{url}/mounts", w.bob)
    assert mounts.status_code == 200 and w.secret not in mounts.text and NAME not in mounts.text
    assert "/memory/open-notes" in mounts.text  # the Memory Bob reaches is mounted
    block = w.api.post(f"{url}/memory_block", w.bob, {"memory_block": {}})
    assert block.status_code == 200 and NAME not in block.text and "launch" not in block.text
    listed = w.api.post(f"{url}/files/list", w.bob, {"file": {"path": "/"}})
    assert listed.status_code == 200 and NAME not in listed.text
    # Its files by path, every verb: the path is outside every mount, as for a Memory that never existed
    hidden_path, absent_path = f"/memory/{NAME}/notes.md", "/memory/nothing-here/notes.md"
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("show", {}),
        ("write", {"content": "x", "expected_public_id": None, "expected_lock_version": None}),
        ("edit", {"old_text": "launch", "new_text": "x", **PAIR}),
        ("delete", PAIR),
    ]
    for verb, body in bodies:
        hidden = w.api.post(f"{url}/files/{verb}", w.bob, {"file": {"path": hidden_path, **body}})
        absent = w.api.post(f"{url}/files/{verb}", w.bob, {"file": {"path": absent_path, **body}})
        assert code(hidden) == code(absent) and hidden.status_code >= 400, (verb, hidden.text)
        assert "launch" not in hidden.text
    renamed = w.api.post(
        f"{url}/files/rename",
        w.bob,
        {"file": {"path": hidden_path, "new_path": "/memory/open-notes/b.md", **PAIR}},
    )
    assert renamed.status_code >= 400 and "launch" not in renamed.text

    # A session configured to mount it is refused as for an unknown id
    def configured(mem: str) -> requests.Response:
        caps = [{"ref": "memory", "config": {"mounts": [{"memory": mem, "path": "/workspace/s"}]}}]
        return w.api.post(
            f"/workspaces/{w.ws}/conversations/{w.conv}/executions", w.bob, {"execution": {"capabilities": caps}}
        )

    hidden, absent = configured(w.secret), configured(NOBODY)
    assert code(hidden) == code(absent) and hidden.status_code >= 400
    assert hidden.json()["error"]["message"] == absent.json()["error"]["message"].replace(NOBODY, w.secret)
    # And the model's tools of Bob's execution see none of it
    ls = w.api.post(f"{url}/tools/memory_ls", w.bob, {"input": {"path": "/"}})
    assert ls.status_code == 200 and NAME not in ls.text
    read = w.api.post(f"{url}/tools/memory_read", w.bob, {"input": {"path": hidden_path}})
    assert read.status_code == 200 and read.json()["is_error"] and "launch" not in read.text
