"""The Python client: every route reachable, every error code a typed exception, and retries only where safe."""

from __future__ import annotations

import ast
import inspect
import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from agent_memory.api.contract import ROUTES as SERVER_ROUTES
from agent_memory.api.contract import path_parameters
from agent_memory.api.errors import CATALOGUE
from agent_memory.edges.tools.dispatch import TOOLS
from agent_memory_sdk import client as client_module
from agent_memory_sdk.client import (
    ERRORS,
    NEW,
    READ_ONLY_POSTS,
    READ_ONLY_TOOLS,
    AlreadyExists,
    ConversationArchived,
    InternalError,
    MemoryApiError,
    MemoryClient,
    MemoryConnectionError,
    MemoryContentInvalid,
    MemoryDescriptionInvalid,
    MemoryDocumentTooLarge,
    MemoryEditAmbiguous,
    MemoryEditNotFound,
    MemoryNotFound,
    MemoryPathInvalid,
    MemoryReadOnly,
    MemoryScopeUnavailable,
    NotAuthenticated,
    NotAuthorized,
    NotFound,
    ParameterInvalid,
    ParameterMissing,
    RateLimited,
    SkillNameInvalid,
    SkillScopeUnavailable,
    StaleObject,
    ValidationFailed,
    exception_name,
    expectation,
)
from agent_memory_sdk.local.runtime import LocalService
from agent_memory_sdk.local.template import _compile
from agent_memory_sdk.routes import Routes

from ..support import client_room

# ---- the route table and the exception classes -----------------------------------------------------


def test_the_generated_methods_reach_each_route_by_its_method_and_path(scripted: Callable[..., Scripted]) -> None:
    # Given a service that answers every request
    server = scripted(Reply(200, {}))
    client = MemoryClient(server.url, "am_h_x_y", backoff=0.0)
    samples = {"agent_name": "helper", "tool_name": "memory_ls", "memory_id": "mem_" + "0" * 32}
    for route in SERVER_ROUTES:
        # When each route's generated method is called once
        server.seen.clear()
        params = {p: samples.get(p, WS) for p in path_parameters(route.path)}
        getattr(client.routes, route.name)(**params, **({"body": {}} if route.request else {}))
        # Then exactly one request went out, to that route's method and path
        [(method, raw_path, _)] = server.seen
        assert method == route.method and _compile(route.path)[0].match(raw_path.split("?", 1)[0]), route.name


def test_the_helpers_reach_the_routes_of_the_contract(scripted: Callable[..., Scripted]) -> None:
    # Given a service that answers every request with a body holding whatever a method reads back
    everything = {
        **{
            k: {"public_id": WS}
            for k in (
                "workspace",
                "conversation",
                "execution",
                "memory_block",
                "skill",
                "speaker",
                "member",
                "agent",
                "human",
                "file",
                "lease",
                "record",
            )
        },
        "memories": [],
        "mounts": [],
        "files": [],
        "memory": {"public_id": WS},  # a document for show and write; listing reads it without a check
        "version": {"public_id": WS},
        "tools": [],
        "skills": [],
        "token": "t",
        "entries": [],
        "entry": {"key": "k"},
        "merge": {"landed": [], "kept": []},
    }
    server = scripted(Reply(200, everything))
    client = MemoryClient(server.url, "am_h_x_y", operator_key="k", backoff=0.0)
    # When every public method and every door's verbs are called once
    client.create_account("a", "b")
    client.create_human("h")
    client.rotate_human_credentials(CONV)
    client.revoke_human_credentials(CONV)
    client.create_workspace("w")
    client.update_workspace(WS, tool_provider_overrides={})
    client.add_member(WS, human_public_id=CONV)
    client.create_conversation(WS)
    client.show_conversation(WS, CONV)
    client.archive_conversation(WS, CONV)
    client.replace_memory_context(WS, CONV, None)
    client.fork_conversation(WS, CONV)
    client.merge_conversation(WS, CONV)
    client.list_store_entries(WS, CONV)
    client.show_store_entry(WS, CONV, "k")
    client.write_store_entry(WS, CONV, "k", {"a": 1}, None)
    client.delete_store_entry(WS, CONV, "k", 0)
    client.delete_conversation(WS, CONV)
    client.memory_block(WS, CONV)
    client.list_skills(WS, CONV)
    client.load_skill(WS, CONV, "pdf")
    client.create_agent("helper")
    client.rotate_agent_credentials(CONV)
    client.create_speaker("visitor", CONV)
    client.create_execution(WS, CONV)
    client.call_tool(CONV, "memory_ls", {})
    client.stop_execution(CONV)
    client.execution_memory_block(CONV)
    session = client.session_files(CONV)
    session.mounts()
    session.ls()
    session.show("/workspace/a.md")
    session.write("/workspace/a.md", "x", NEW)
    session.edit("/workspace/a.md", "x", "y", DOC)
    session.delete("/workspace/a.md", DOC)
    session.rename("/workspace/a.md", "conversation/a.md", DOC)
    client.tool_schemas()
    client.openapi_document()
    client.promote(WS, "conversation/a.md", 0, "workspace/a.md", NEW, conversation_public_id=CONV)
    client.export_workspace(WS)
    client.export_own()
    client.append_record(WS, "Invoices get a year prefix", "decision", tags={"facet": "billing"})
    client.get_record(WS, CONV)
    client.update_record(WS, CONV, 0, content="Invoices get a year prefix, per tenant")
    client.delete_record(WS, CONV, 1)
    client.search_records(WS, "invoice")
    client.consolidate(WS, "chat-301")
    client.review_record(WS, CONV, "release")
    client.export_records(WS)
    mem = "mem_" + "0" * 32
    client.create_memory("runbooks", files={"a.md": "x"})
    client.list_memories()
    client.show_memory(mem)
    client.update_memory(mem, description="d")
    client.archive_memory(mem)
    client.delete_memory(mem)
    client.sync_memory(mem)
    client.promote_to_memory({"memory_id": mem, "path": "a.md", "lock_version": 0}, "copy")
    client.show_agent(CONV)
    client.update_agent(CONV, memories=[])
    client.agent_memories(CONV)
    client.memory_map()
    client.memory_map_page()
    files = client.memory_files(mem)
    files.ls()
    files.show("a.md")
    files.write("a.md", "x", NEW)
    files.edit("a.md", "x", "y", DOC)
    files.delete("a.md", DOC)
    files.grep("x")
    files.versions("a.md")
    files.show_version("a.md", 0)
    files.rollback("a.md", 0, DOC)
    files.lease("a.md", 10)
    doors = [
        client.conversation_memory(WS, CONV),
        client.workspace_memory(WS),
        client.profile_memory(),
        client.definition_memory("helper"),
    ]
    for door in doors:
        door.ls()
        door.show("conversation/a.md")
        door.write("conversation/a.md", "x", NEW)
        door.edit("conversation/a.md", "x", "y", DOC)
        door.grep("x")
        door.delete("conversation/a.md", DOC)
        door.review("conversation/a.md", 0, "release", DOC)
        door.versions("conversation/a.md")
        door.show_version("conversation/a.md", 0)
        door.rollback("conversation/a.md", 0, DOC)
        door.redact("conversation/a.md", 0, DOC)
    # Then each request sent is a route of the contract the gateway serves, by method and path
    reached = set()
    for method, raw_path, _ in server.seen:
        path = raw_path.split("?", 1)[0]
        names = [r.name for r in SERVER_ROUTES if r.method == method and _compile(r.path)[0].match(path)]
        assert names, f"{method} {path} is no route of the contract"
        reached.update(names)
    # And they reach most routes (a new one is reachable through `client.routes` without a helper of its own)
    assert len(reached) > 0.9 * len(SERVER_ROUTES)


def test_the_client_retries_exactly_the_routes_the_service_declares_read_only() -> None:
    # Given each route's declared access in the server's contract
    for r in SERVER_ROUTES:
        # Then the client resends it on failure only if it cannot change anything
        retried = r.method == "GET" or r.name in READ_ONLY_POSTS
        # (the console's session routes: reading the session is a GET, signing in or out is not)
        assert retried == (r.access in ("read", "public") or (r.access == "console" and r.method == "GET")), r.name
    # And the model's tools it resends are the read-only ones
    assert {"memory_ls", "memory_read", "memory_history", "memory_search", "skill"} == READ_ONLY_TOOLS
    assert set(TOOLS) > READ_ONLY_TOOLS


def test_every_catalogued_code_has_its_own_exception_class() -> None:
    # Given the one error catalogue
    # Then each code has a class named after it, exported by the client, with the code's HTTP status
    for code, known in CATALOGUE.items():
        status = known.status
        cls = ERRORS[code]
        assert cls.__name__ == exception_name(code)
        assert getattr(client_module, cls.__name__) is cls
        assert issubclass(cls, MemoryApiError)
        assert (cls.code, cls.status) == (code, status)
    assert StaleObject.__name__ == "StaleObject" and ERRORS["memory_full"].__name__ == "MemoryFull"
    # And the classes are written out (generated by `make template`), so type checkers read them as they are
    tree = ast.parse(Path(client_module.__file__).read_text())
    declared = {
        n.name for n in tree.body if isinstance(n, ast.ClassDef) and n.name in {c.__name__ for c in ERRORS.values()}
    }
    assert declared == {exception_name(c) for c in CATALOGUE}


def test_every_route_is_a_method_of_the_client_named_by_the_route() -> None:
    # Given the route table, Then the client's generated `routes` has one method per route
    for route in SERVER_ROUTES:
        method = getattr(Routes, route.name)
        params = inspect.signature(method).parameters
        # taking the route's path parameters by keyword, and its body when it reads one
        assert set(path_parameters(route.path)) <= {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY}
        assert ("body" in params) == (route.request is not None), route.name
        assert route.description.split(".")[0] in " ".join((method.__doc__ or "").split()), route.name


def test_importing_the_package_or_the_client_loads_nothing_heavy() -> None:
    # When a fresh interpreter imports the package, then the client
    probe = (
        "import sys, agent_memory; a = 'agent_memory_sdk.client' in sys.modules; "
        "from agent_memory_sdk import MemoryClient; "
        "heavy = [m for m in ('boto3', 'botocore', 'pydantic', 'regex', 'aws_lambda_powertools') "
        "if m in sys.modules]; print(a, heavy)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    # Then the package did not load the client, and the client loaded none of the service's dependencies
    assert out.strip() == "False []"


# ---- a scripted HTTP server for what the real gateway never does on demand ---------------------------


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Scripted:
    """Answers each request with the next scripted reply (the last one repeats) and records the requests."""

    replies: list[Reply]
    seen: list[tuple[str, str, Any]] = field(default_factory=list)
    url: str = ""
    # The Idempotency-Key each request carried (None without one), in the order they came.
    keys: list[str | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        script = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                script.seen.append((self.command, self.path, json.loads(raw) if raw else None))
                script.keys.append(self.headers.get("Idempotency-Key"))
                reply = script.replies.pop(0) if len(script.replies) > 1 else script.replies[0]
                time.sleep(reply.delay)
                data = b"" if reply.body is None else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up waiting (the timeout tests)

            do_GET = do_POST = do_PATCH = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def scripted() -> Iterator[Callable[..., Scripted]]:
    servers: list[Scripted] = []

    def make(*replies: Reply) -> Scripted:
        servers.append(Scripted(list(replies)))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


WS, CONV = str(uuid.uuid4()), str(uuid.uuid4())
DOC = {"path": "conversation/plan.md", "public_id": str(uuid.uuid4()), "lock_version": 0, "content": "x"}


def fast(url: str, **kw: Any) -> MemoryClient:
    return MemoryClient(url, "am_h_x_y", backoff=0.0, **kw)


@pytest.mark.parametrize("code", sorted(CATALOGUE))
def test_each_error_code_in_a_response_raises_its_exception(scripted: Callable[..., Scripted], code: str) -> None:
    # Given a service that refuses a write with this code
    status = CATALOGUE[code].status
    server = scripted(Reply(status, {"error": {"code": code, "message": "because", "details": {"k": 1}}}))
    # When the client sends the write
    with pytest.raises(ERRORS[code]) as caught:
        fast(server.url).conversation_memory(WS, CONV).write("conversation/plan.md", "x", NEW)
    # Then the exception carries the code, the status, the message and the details
    assert (caught.value.code, caught.value.status, caught.value.message) == (code, status, "because")
    assert caught.value.details == {"k": 1}
    assert str(caught.value) == f"{code} ({status}): because"


def test_a_refusal_without_our_error_body_maps_by_status(scripted: Callable[..., Scripted]) -> None:
    # Given a proxy's own pages (no error body) and a code from a newer service
    server = scripted(
        Reply(429, {"message": "Too Many Requests"}, {"Retry-After": "7"}),
        Reply(502, None),
        Reply(418, {"error": {"code": "teapot_brewing", "message": "later"}}),
    )
    client = fast(server.url, retries=0)
    door = client.conversation_memory(WS, CONV)
    # Then a 429 is RateLimited with the wait the service asked for, a bare 5xx InternalError
    with pytest.raises(RateLimited) as limited:
        door.write("conversation/a.md", "x", NEW)
    assert limited.value.retry_after == 7.0
    with pytest.raises(InternalError) as internal:
        door.delete("conversation/a.md", DOC)
    assert internal.value.status == 502
    # And an unknown code is still a MemoryApiError that keeps the code
    with pytest.raises(MemoryApiError) as unknown:
        door.write("conversation/a.md", "x", NEW)
    assert type(unknown.value) is MemoryApiError and unknown.value.code == "teapot_brewing"


# ---- retry policy --------------------------------------------------------------------------------

UNAVAILABLE = Reply(503, {"error": {"code": "internal_error", "message": "try again"}})


def test_reads_are_retried_after_a_503(scripted: Callable[..., Scripted]) -> None:
    # Given a service that answers 503 once, then succeeds
    server = scripted(UNAVAILABLE, Reply(200, {"memory": DOC}))
    client = fast(server.url)
    # When the client shows a document (a read-only POST)
    doc = client.conversation_memory(WS, CONV).show("conversation/plan.md")
    # Then it retried once and returned the document
    assert doc == DOC
    assert [s[0] for s in server.seen] == ["POST", "POST"]
    # And a GET, the memory block and grep behave the same way
    for call in (
        lambda: client.show_conversation(WS, CONV),
        lambda: client.conversation_memory(WS, CONV).ls(),
        lambda: client.conversation_memory(WS, CONV).grep("x"),
        lambda: client.memory_block(WS, CONV),
        lambda: client.call_tool(str(uuid.uuid4()), "memory_read", {"path": "conversation/plan.md"}),
    ):
        server.seen.clear()
        server.replies[:] = [UNAVAILABLE, Reply(200, {"conversation": {}, "memory": [], "memory_block": {}})]
        call()
        assert len(server.seen) == 2


def test_a_mutation_is_retried_under_its_own_idempotency_key(scripted: Callable[..., Scripted]) -> None:
    # Given a service that answers 503 once, then succeeds (with a body holding what each method reads)
    done = Reply(201, {"memory": DOC, "workspace": {"public_id": WS}, "conversation": {}, "execution": {}})
    server = scripted(UNAVAILABLE, done)
    client = fast(server.url)
    door = client.conversation_memory(WS, CONV)
    mutations: list[Callable[[], Any]] = [
        lambda: door.write("conversation/plan.md", "x", NEW),
        lambda: door.edit("conversation/plan.md", "x", "y", DOC),
        lambda: door.delete("conversation/plan.md", DOC),
        lambda: client.create_workspace("room"),
        lambda: client.archive_conversation(WS, CONV),
        lambda: client.fork_conversation(WS, CONV),
        lambda: client.create_execution(WS, CONV),
        lambda: client.call_tool(str(uuid.uuid4()), "memory_write", {"path": "conversation/plan.md"}),
    ]
    keys: list[str | None] = []
    for mutate in mutations:
        server.seen.clear()
        server.keys.clear()
        server.replies[:] = [UNAVAILABLE, done]
        # When the client sends a mutation, it is sent again after the 503 and succeeds
        mutate()
        # Then both sends carried one key, which the service answers once: the retry replays a change that
        # landed instead of making it twice
        assert len(server.seen) == 2
        assert server.keys[0] is not None and server.keys[0] == server.keys[1]
        keys.append(server.keys[0])
    # And every mutation had a key of its own
    assert len(set(keys)) == len(mutations)


def test_a_refused_conditional_write_is_never_retried(scripted: Callable[..., Scripted]) -> None:
    # Given a service that refuses a stale edit
    stale = Reply(409, {"error": {"code": "stale_object", "message": "read it again"}})
    server = scripted(stale, Reply(200, {"memory": DOC}))
    # When the client sends the edit
    with pytest.raises(StaleObject):
        fast(server.url).conversation_memory(WS, CONV).edit("conversation/plan.md", "x", "y", DOC)
    # Then nothing was resent: recomputing the change on what is there now is the caller's work
    assert len(server.seen) == 1
    assert server.seen[0][2]["memory"]["expected_public_id"] == DOC["public_id"]


def test_rate_limited_reads_wait_as_asked_then_give_up(scripted: Callable[..., Scripted]) -> None:
    # Given a service that keeps answering 429 with Retry-After: 0
    limited = Reply(429, {"error": {"code": "rate_limited", "message": "slow down"}}, {"Retry-After": "0"})
    server = scripted(limited)
    # When a read is sent with two retries
    with pytest.raises(RateLimited):
        fast(server.url, retries=2).show_conversation(WS, CONV)
    # Then it was tried three times in all
    assert len(server.seen) == 3
    # And with no retries, once
    server.seen.clear()
    with pytest.raises(RateLimited):
        fast(server.url, retries=0).show_conversation(WS, CONV)
    assert len(server.seen) == 1


def test_every_call_has_a_timeout(scripted: Callable[..., Scripted]) -> None:
    # Given a service that takes a second to answer
    server = scripted(Reply(200, {"conversation": {}, "memory": DOC}, delay=1.0))
    client = fast(server.url, timeout=0.2, retries=1)
    # When a read times out, it is retried, then reported as a connection failure that changed nothing
    started = time.monotonic()
    with pytest.raises(MemoryConnectionError) as read:
        client.show_conversation(WS, CONV)
    assert time.monotonic() - started < 0.9
    assert len(server.seen) == 2 and not read.value.may_have_applied
    # And when a write times out, it is resent under its key (the service would answer it once), and when
    # that times out too it may have been applied
    server.seen.clear()
    with pytest.raises(MemoryConnectionError) as write:
        client.conversation_memory(WS, CONV).write("conversation/plan.md", "x", NEW)
    assert len(server.seen) == 2 and write.value.may_have_applied


def test_an_unreachable_service_is_a_connection_error() -> None:
    # Given a port nobody listens on
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = fast(f"http://127.0.0.1:{port}")
    # Then reads and writes fail with MemoryConnectionError; a refused connection carried no write
    with pytest.raises(MemoryConnectionError) as read:
        client.show_conversation(WS, CONV)
    with pytest.raises(MemoryConnectionError) as write:
        client.create_workspace("room")
    assert not read.value.may_have_applied and not write.value.may_have_applied


# ---- against the real gateway ----------------------------------------------------------------------


@dataclass
class Room:
    admin: MemoryClient
    owner: MemoryClient
    ws: str
    conv: str


@pytest.fixture
def room(fresh: LocalService) -> Room:
    admin, owner, ws = client_room(fresh.url, fresh.operator_key)
    return Room(admin, owner, ws, owner.create_conversation(ws)["public_id"])


def test_the_conversation_door_round_trip(room: Room) -> None:
    # Given a conversation door
    door = room.owner.conversation_memory(room.ws, room.conv)
    # When a document is created, edited, listed, searched and deleted through the client
    created = door.write("conversation/plan.md", "ship friday", NEW)
    edited = door.edit("conversation/plan.md", "friday", "monday", created)
    assert door.show("conversation/plan.md")["content"] == "ship monday"
    assert [d["path"] for d in door.ls()] == ["conversation/plan.md"]
    assert door.grep("monday")["matches"][0]["path"] == "conversation/plan.md"
    door.delete("conversation/plan.md", edited)
    # Then each write moved the revision, and the document is gone
    assert room.owner.show_conversation(room.ws, room.conv)["context_revision"] == 3
    assert door.ls() == []


def test_the_other_doors_and_the_directory_routes(room: Room) -> None:
    owner = room.owner
    # Given an agent, a speaker, another human and a definition
    program = owner.create_agent("helper")
    definition = owner.create_agent("scribe", kind="definition")
    speaker = owner.create_speaker("visitor", program["agent"]["public_id"])
    bob = owner.create_human("bob")
    member = owner.add_member(room.ws, human_public_id=bob["human"]["public_id"])
    # Then each door serves its own rows
    assert owner.workspace_memory(room.ws).write("workspace/team.md", "hi", NEW)["path"] == "workspace/team.md"
    assert owner.profile_memory().write("user/me.md", "likes tea", NEW)["lock_version"] == 0
    scribe = owner.definition_memory("scribe").write("agent/style.md", "terse", NEW)
    assert scribe["path"] == "agent/style.md"
    agent_client = owner.with_token(program["token"])
    assert agent_client.profile_memory().write("agent/own.md", "mine", NEW)["path"] == "agent/own.md"
    # And the directory routes answer in their shapes
    assert speaker["agent_public_id"] == program["agent"]["public_id"]
    assert member["workspace_public_id"] == room.ws
    assert definition["agent"]["kind"] == "definition"
    rotated = owner.rotate_agent_credentials(program["agent"]["public_id"])
    with pytest.raises(NotAuthenticated):
        agent_client.profile_memory().ls()
    assert owner.with_token(rotated["token"]).profile_memory().show("agent/own.md")["content"] == "mine"
    ctx = {"bindings": [{"name": "conversation", "scope": "conversation", "access": "read_write"}]}
    assert owner.replace_memory_context(room.ws, room.conv, ctx)["memory_context"] == ctx
    assert owner.archive_conversation(room.ws, room.conv)["archived"] is True


def _archived(room: Room) -> None:
    room.owner.archive_conversation(room.ws, room.conv)
    room.owner.conversation_memory(room.ws, room.conv).write("conversation/a.md", "x", NEW)


def _read_only(room: Room) -> None:
    ctx = {"bindings": [{"name": "conversation", "scope": "conversation", "access": "read"}]}
    room.owner.replace_memory_context(room.ws, room.conv, ctx)
    room.owner.conversation_memory(room.ws, room.conv).write("conversation/a.md", "x", NEW)


def _stale(room: Room) -> None:
    door = room.owner.conversation_memory(room.ws, room.conv)
    door.write("conversation/a.md", "x", NEW)
    door.write("conversation/a.md", "y", NEW)


def _edit(room: Room, content: str) -> None:
    door = room.owner.conversation_memory(room.ws, room.conv)
    doc = door.write("conversation/a.md", content, NEW)
    door.edit("conversation/a.md", "x", "y", doc)


def _raw(room: Room, memory: dict[str, Any], suffix: str = "") -> None:
    path = f"/agent_api/v1/workspaces/{room.ws}/conversations/{room.conv}/memory{suffix}"
    room.owner.request("POST", path, {"memory": memory})


def _door(room: Room) -> Any:
    return room.owner.conversation_memory(room.ws, room.conv)


PROVOKED: dict[type[MemoryApiError], Callable[[Room], Any]] = {
    NotAuthenticated: lambda r: r.owner.with_token("am_h_nobody_nothing").show_conversation(r.ws, r.conv),
    NotAuthorized: lambda r: r.owner.with_token(r.owner.create_agent("bot")["token"]).create_human("eve"),
    NotFound: lambda r: r.owner.show_conversation(r.ws, str(uuid.uuid4())),
    AlreadyExists: lambda r: [r.owner.create_agent("scribe", kind="definition") for _ in range(2)],
    ParameterMissing: lambda r: _raw(r, {"path": "conversation/a.md", "content": "x"}),
    ParameterInvalid: lambda r: _door(r).grep("x", limit=0),
    MemoryNotFound: lambda r: _door(r).show("conversation/missing.md"),
    MemoryPathInvalid: lambda r: _door(r).show("plan.md"),
    MemoryScopeUnavailable: lambda r: _door(r).show("user/me.md"),
    StaleObject: _stale,
    ConversationArchived: _archived,
    MemoryReadOnly: _read_only,
    MemoryEditNotFound: lambda r: _edit(r, "nothing to see"),
    MemoryEditAmbiguous: lambda r: _edit(r, "x and x"),
    MemoryContentInvalid: lambda r: _raw(
        r, {"path": "conversation/a.md", "content": 42, "expected_public_id": None, "expected_lock_version": None}
    ),
    MemoryDocumentTooLarge: lambda r: _door(r).write("conversation/big.md", "x" * (64 * 1024 + 1), NEW),
    MemoryDescriptionInvalid: lambda r: _door(r).write("conversation/a.md", "x", NEW, description="no"),
    SkillNameInvalid: lambda r: _door(r).show("workspace/skills/PDF"),
    SkillScopeUnavailable: lambda r: _door(r).write("conversation/skills/pdf", "x", NEW, description="d"),
    ValidationFailed: lambda r: r.owner.replace_memory_context(r.ws, r.conv, {"bindings": [{"name": "BAD"}]}),
}


@pytest.mark.parametrize("expected", list(PROVOKED), ids=lambda c: c.__name__)
def test_real_refusals_raise_their_exception(room: Room, expected: type[MemoryApiError]) -> None:
    # Given a refusal provoked through the local gateway
    # Then the client raises that code's exception class
    with pytest.raises(expected) as caught:
        PROVOKED[expected](room)
    assert caught.value.status == CATALOGUE[caught.value.code].status
    assert caught.value.message


def test_an_agent_runtime_works_through_the_client(room: Room) -> None:
    owner = room.owner
    # Given a conversation answered by a paired program, and a skill in the room
    program = owner.create_agent("helper")
    agent = owner.with_token(program["token"])
    owner.add_member(room.ws, agent_public_id=program["agent"]["public_id"])
    conv = owner.create_conversation(room.ws, answering_agent_public_id=program["agent"]["public_id"])["public_id"]
    owner.workspace_memory(room.ws).write("workspace/skills/pdf-forms", "Fill forms.", NEW, description="PDF forms")
    # When the agent starts an execution and its model calls the tools
    execution = agent.create_execution(room.ws, conv)["execution"]
    assert execution["tools"] == list(TOOLS)
    assert [t["name"] for t in agent.tool_schemas()] == list(TOOLS)
    assert [t["function"]["name"] for t in agent.tool_schemas("openai")] == list(TOOLS)
    plan = {"path": "conversation/plan.md", "content": "ship friday"}
    wrote = agent.call_tool(execution["public_id"], "memory_write", {**plan, **expectation(NEW)})
    again = agent.call_tool(execution["public_id"], "memory_write", {**plan, **expectation(NEW)})
    read = agent.call_tool(execution["public_id"], "memory_read", {"path": "conversation/plan.md"})
    # Then results come back as results, a refusal with its code and the next step
    assert not wrote["is_error"] and read["data"]["content"] == "ship friday"
    assert again["is_error"] and again["code"] == "stale_object" and "memory_read" in again["content"]
    # And the block, the skills catalog and a skill load show what the model would see
    assert "ship friday" in owner.memory_block(room.ws, conv)["text"]
    assert [s["name"] for s in agent.list_skills(room.ws, conv)] == ["pdf-forms"]
    assert agent.load_skill(room.ws, conv, "pdf-forms")["content"] == "Fill forms."
    # And a fork carries the document into an independent child
    child = owner.fork_conversation(room.ws, conv)["public_id"]
    assert child != conv
    assert owner.conversation_memory(room.ws, child).show("conversation/plan.md")["content"] == "ship friday"
