"""One successful call per function, for the cold-start table (tests/coldstart.py, `make bench`).

A cold start is measured to the function's first *successful* answer: a 404 or a 400 would skip the reads,
the clients and the models a real first call pays. So every function's event here is a call that succeeds
in a small world made for it, and each run gets a call of its own, prepared before its process starts
(an edit, a delete or a sign-out succeeds once: the next run must meet a row of its own).

The changing routes' calls are the ones `tests/http/test_idempotency_routes.py` already sends (one valid
request per mutating route, kept complete by its own test); the reading routes' calls are below, and
`test_every_function_has_a_cold_case` (tests/unit/test_coldcases.py) keeps the two together complete.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests
from agent_memory.api.contract import API, BY_NAME
from agent_memory.core.settings import GIT_FILE_ROOTS
from agent_memory_sdk.local.gateway import build_event
from agent_memory_sdk.local.runtime import LocalService

from .http.test_idempotency_routes import CASES as CHANGES
from .http.test_idempotency_routes import NEW, Case, Request, World, build_world
from .support import Api, created

# Functions that are not a route of the HTTP API.
TOOL_INVOKE, SWEEPER, UNKNOWN_ROUTE = "tool_invoke", "sweeper", "unknown_route"
# What each of those answers on success: the catch-all's success is its 404 envelope.
NOT_ROUTES = {TOOL_INVOKE: 200, SWEEPER: 200, UNKNOWN_ROUTE: 404}
SESSION = "/console/api/session"


def world(service: LocalService) -> World:
    """The idempotency test's world, made on the bench's storage; a synced Memory's repository lies where the
    service may read one (the bench names the folder)."""
    return build_world(Api(service.url, service.operator_key), Path(os.environ[GIT_FILE_ROOTS]))


# ---- the reading routes' calls ------------------------------------------------------------------------

_DOORS: dict[str, tuple[Callable[[World], str], str]] = {  # door -> (its memory URL, a root it writes)
    "conversation": (lambda w: f"{w.conv_url}/memory", "conversation"),
    "workspace": (lambda w: f"/workspaces/{w.ws}/memory", "workspace"),
    "profile": (lambda w: "/profile/memory", "user"),
    "definition": (lambda w: f"/profile/agents/{w.definition}/memory", "agent"),
}


def _read_verb(door: str, verb: str) -> Case:
    def case(w: World) -> Request:
        url, root = _DOORS[door]
        base = url(w)
        path = f"{root}/notes.md"
        if verb == "list":
            return Request("GET", base, w.ada)
        if verb == "export":
            return Request("GET", f"{base}/export", w.ada)
        if verb == "grep":
            return Request("POST", f"{base}/grep", w.ada, {"memory": {"pattern": "friday"}})
        body: dict[str, Any] = {"path": path}
        if verb == "versions/show":
            body["lock_version"] = 0
        return Request("POST", f"{base}/{verb}", w.ada, {"memory": body})

    return case


def _memory_file(verb: str) -> Case:
    def case(w: World) -> Request:
        mem = _shared_memory(w)
        if verb == "list":
            return Request("GET", f"/memories/{mem}/files", w.ada)
        if verb == "show_memory":
            return Request("GET", f"/memories/{mem}", w.ada)
        if verb == "grep":
            return Request("POST", f"/memories/{mem}/files/grep", w.ada, {"file": {"pattern": "friday"}})
        body: dict[str, Any] = {"path": "a.md"}
        if verb == "versions/show":
            body["lock_version"] = 0
        return Request("POST", f"/memories/{mem}/files/{verb}", w.ada, {"file": body})

    return case


def _shared_memory(w: World) -> str:
    """An organization Memory with a file of two versions, made once per world."""
    made: dict[str, str] = w.__dict__.setdefault("_cold", {})
    if "memory" not in made:
        mem = made["memory"] = w.memory("cold")
        first = w.file(mem, "a.md", "ship friday")
        again = {"path": "a.md", "content": "ship friday, then monday", "expected_public_id": first["public_id"]}
        again["expected_lock_version"] = first["lock_version"]
        w.ok(w.api.post(f"/memories/{mem}/files", w.ada, {"file": again}))
    return made["memory"]


def _record(w: World) -> str:
    made: dict[str, str] = w.__dict__.setdefault("_cold", {})
    if "record" not in made:
        made["record"] = w.record(w.ada, "We agreed to deploy on fridays.")["public_id"]
    return made["record"]


def _execution(w: World) -> str:
    made: dict[str, str] = w.__dict__.setdefault("_cold", {})
    if "execution" not in made:
        made["execution"] = w.execution()
    return made["execution"]


def _console(w: World) -> tuple[str, str]:
    """A console session of Ada's: (its cookie, its CSRF token). A new one per call: a sign-out ends it."""
    r = requests.post(f"{w.api.url}{SESSION}", json={"token": w.ada.token}, timeout=30)
    assert r.status_code == 201, r.text
    return r.headers["set-cookie"].split(";")[0], str(r.json()["csrf_token"])


def _sign_out(w: World) -> Request:
    cookie, csrf = _console(w)
    return Request("POST", f"{SESSION}/delete", None, None, {"cookie": cookie, "x-csrf-token": csrf})


READS: dict[str, Case] = {
    "show_conversation": lambda w: Request("GET", w.conv_url, w.ada),
    "conversation_store_entries_list": lambda w: Request("GET", f"{w.conv_url}/store_entries", w.ada),
    "conversation_store_entry_show": lambda w: Request(
        "POST", f"{w.conv_url}/store_entries/show", w.ada, {"entry": {"key": "cold"}}
    ),
    **{
        f"{door}_memory_{name}": _read_verb(door, verb)
        for door in _DOORS
        for name, verb in (
            ("list", "list"),
            ("show", "show"),
            ("grep", "grep"),
            ("versions", "versions"),
            ("version_show", "versions/show"),
        )
    },
    "workspace_memory_export": _read_verb("workspace", "export"),
    "profile_memory_export": _read_verb("profile", "export"),
    "conversation_skills_list": lambda w: Request("GET", f"{w.conv_url}/skills", w.ada),
    "conversation_skill_load": lambda w: Request(
        "POST", f"{w.conv_url}/skills/load", w.ada, {"skill": {"name": "deploy"}}
    ),
    "conversation_memory_block": lambda w: Request("POST", f"{w.conv_url}/memory_block", w.ada, {"memory_block": {}}),
    "tool_schemas": lambda w: Request("GET", "/tools/schemas", None),
    "openapi_document": lambda w: Request("GET", "/openapi.json", None),
    "execution_memory_block": lambda w: Request(
        "POST", f"/executions/{_execution(w)}/memory_block", w.alpha, {"memory_block": {}}
    ),
    "execution_mounts": lambda w: Request("GET", f"/executions/{_execution(w)}/mounts", w.alpha),
    "execution_files_list": lambda w: Request(
        "POST", f"/executions/{_execution(w)}/files/list", w.alpha, {"file": {"path": "conversation"}}
    ),
    "execution_file_show": lambda w: Request(
        "POST", f"/executions/{_execution(w)}/files/show", w.alpha, {"file": {"path": "conversation/notes.md"}}
    ),
    "list_memories": lambda w: Request("GET", "/memories", w.ada),
    "show_memory": _memory_file("show_memory"),
    "memory_files_list": _memory_file("list"),
    "memory_file_show": _memory_file("show"),
    "memory_file_grep": _memory_file("grep"),
    "memory_file_versions": _memory_file("versions"),
    "memory_file_version_show": _memory_file("versions/show"),
    "show_agent": lambda w: Request("GET", f"/agents/{w.alpha.public_id}", w.ada),
    "agent_memories": lambda w: Request("GET", f"/agents/{w.alpha.public_id}/memories", w.ada),
    "memory_map": lambda w: Request("GET", "/memory_map", w.ada),
    "memory_map_page": lambda w: Request("GET", "/memory_map.html", w.ada),
    "console_page": lambda w: Request("GET", "/console", None),
    "console_script": lambda w: Request("GET", "/console/console.js", None),
    "console_style": lambda w: Request("GET", "/console/console.css", None),
    "console_session": lambda w: Request("GET", SESSION, None, None, {"cookie": _console(w)[0]}),
    "console_sign_in": lambda w: Request("POST", SESSION, None, {"token": w.ada.token}),
    "console_sign_out": _sign_out,
    "records_search": lambda w: Request(
        "POST", f"/workspaces/{w.ws}/records/search", w.ada, {"search": {"query": "which day do we deploy"}}
    ),
    "records_export": lambda w: Request("GET", f"/workspaces/{w.ws}/records/export", w.ada),
    "record_show": lambda w: Request("GET", f"/workspaces/{w.ws}/records/{_record(w)}", w.ada),
}

CASES: dict[str, Case] = {**CHANGES, **READS}


def staged_world(service: LocalService) -> World:
    """A new world with what the reading routes read (`stage`)."""
    w = world(service)
    stage(w)
    return w


def stage(w: World) -> None:
    """What the reading routes read: in each door a document of two versions and a skill, an entry, a
    record; what a call needs of its own, its case makes."""
    for door, (url, root) in _DOORS.items():
        base = url(w)
        first = created(w.api.write(w.ada, base, f"{root}/notes.md", "ship friday"))
        created(w.api.write(w.ada, base, f"{root}/notes.md", "ship friday, then monday", first))
        if door == "workspace":
            skill = w.api.write(w.ada, base, "workspace/skills/deploy", "# Deploy\n", description="How we deploy")
            created(skill)
    w.ok(w.api.post(f"{w.conv_url}/store_entries", w.ada, {"entry": {"key": "cold", "value": 1, **_no_entry()}}))
    _record(w)
    _shared_memory(w)
    _execution(w)


def _no_entry() -> dict[str, Any]:
    return {"expected_lock_version": NEW["expected_lock_version"]}


# ---- events ----------------------------------------------------------------------------------------------


def expected_status(function: str) -> set[int]:
    """The statuses that count as the function's success."""
    if function in NOT_ROUTES:
        return {NOT_ROUTES[function]}
    route = BY_NAME[function]
    return {route.status, *route.also} - {s for s in route.also if s >= 400}


def event_maker(service: LocalService, w: World, function: str) -> Callable[[], dict[str, Any]]:
    """A function's next successful event: each call prepares a request of its own (in the parent, before the
    measured process starts) and returns it as API Gateway would hand it over."""
    if function == SWEEPER:  # the scheduled job's EventBridge event carries nothing it reads
        return dict
    if function == TOOL_INVOKE:  # invoked in-account, not through the HTTP API
        return lambda: {
            "execution": _execution(w),
            "tool": "memory_read",
            "input": {"path": "conversation/notes.md"},
            "token": w.alpha.token,
        }
    if function == UNKNOWN_ROUTE:
        return lambda: event_of(service, Request("GET", "/no-such-route", w.ada))
    case = CASES[function]
    return lambda: event_of(service, case(w))


def event_of(service: LocalService, req: Request) -> dict[str, Any]:
    """The HTTP API v2 event the gateway would build for a request (the catch-all's when no route matches)."""
    full = req.path if req.path.startswith("/console") else f"{API}{req.path}"
    found = service.gateway.match(req.method, full)
    if found is None:
        assert service.gateway.default is not None
        found = service.gateway.default, {}
    route, params = found
    headers = {"content-type": "application/json", **{k.lower(): v for k, v in (req.headers or {}).items()}}
    if req.who is not None:
        headers["authorization"] = f"Bearer {req.who.token}"
    raw = json.dumps(req.body).encode() if req.body is not None else b""
    return build_event(route, req.method, full, "", headers, raw, params)
