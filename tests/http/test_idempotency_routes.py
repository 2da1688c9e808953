"""Every mutating route of the contract, keyed: its key's record commits in the same transaction as its change.

The routes come from api/contract.ROUTES, not from a list kept here: a new mutating route without a case
below fails `test_every_mutating_route_has_a_case`. Each case sends one valid request with an
Idempotency-Key through the local gateway and watches every DynamoDB write the service sends (botocore's
`before-parameter-build` event on the service's own clients). The key's record (an `IDEM#` item) must be
written exactly once, inside a TransactWriteItems that also changes a row of the route's own (not only a
write-budget meter, `RATE#`); the same request sent again must answer the same, say it is a replay, and
send no write at all. The write budget is on, as deployed, so the transactions written ahead of a change
(a directory change's metering) are among those watched.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from agent_memory.api.contract import API, ROUTES, RouteSpec
from agent_memory.store import aws_clients
from agent_memory_sdk.local.runtime import LocalService

from ..gitrepos import bare, commit, url_of
from ..support import CONV, WORKSPACE, Api, Who, bindings, conv_base, created, ws_base
from .safe_content import INJECTION
from .test_rate_limit import set_budget

pytestmark = pytest.mark.http

# The console's session routes take no Idempotency-Key (a sign-in sent twice opens two sessions, harmless).
MUTATING: dict[str, RouteSpec] = {r.name: r for r in ROUTES if not r.safe_to_retry and r.access != "console"}

# Keyed routes whose record is stored on its own, after the change, and why. Each is still sent twice:
# its record must exist and its replay must answer the same with no write.
RECORDED_ALONE: dict[str, str] = {
    "records_consolidate": "a consolidation is many commits (one per line it consolidates), none of them the "
    "decisive one, so its answer is known, and recorded, only once they are done",
}

WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})


@dataclass(frozen=True)
class Write:
    """One DynamoDB write request: its operation and the partition keys of its items, in order."""

    operation: str
    keys: tuple[str, ...]
    # Whether no item but the key's record changes a row of the route's own (only conditions, or meters).
    no_change: bool = False


def _pk(item: dict[str, Any]) -> str:
    return str(item["pk"]["S"])


def _write(operation: str, params: dict[str, Any]) -> Write:
    if operation == "TransactWriteItems":
        keys: list[str] = []
        changes = 0
        for entry in params["TransactItems"]:
            ((verb, body),) = entry.items()
            pk = _pk(body["Item"] if verb == "Put" else body["Key"])
            keys.append(pk)
            changes += verb != "ConditionCheck" and not pk.startswith(("IDEM#", "RATE#"))
        return Write(operation, tuple(keys), no_change=changes == 0)
    if operation == "BatchWriteItem":
        return Write(
            operation,
            tuple(
                _pk(r["PutRequest"]["Item"] if "PutRequest" in r else r["DeleteRequest"]["Key"])
                for rows in params["RequestItems"].values()
                for r in rows
            ),
        )
    return Write(operation, (_pk(params["Item"] if operation == "PutItem" else params["Key"]),))


@contextmanager
def watched() -> Iterator[list[Write]]:
    """Every DynamoDB write the service sends while the block runs, as the service built it."""
    seen: list[Write] = []

    def note(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in WRITES:
            seen.append(_write(model.name, params))

    clients = aws_clients()
    for c in clients:
        c.meta.events.register("before-parameter-build.dynamodb", note, unique_id="test-idem-routes")
    try:
        yield seen
    finally:
        for c in clients:
            c.meta.events.unregister("before-parameter-build.dynamodb", unique_id="test-idem-routes")


# ---- the world: one for the module, each case prepares its own rows in it ------------------------------


@dataclass
class World:
    api: Api
    ada: Who
    bob: Who
    alpha: Who
    ws: str
    conv: str
    tmp: Path
    definition: str = "tutor"

    @property
    def conv_url(self) -> str:
        return f"/workspaces/{self.ws}/conversations/{self.conv}"

    def ok(self, r: requests.Response, status: int = 201) -> dict[str, Any]:
        assert r.status_code == status, r.text
        out: dict[str, Any] = r.json()
        return out

    def execution(self) -> str:
        return str(
            self.ok(self.api.post(f"{self.conv_url}/executions", self.alpha, {"execution": {}}))["execution"][
                "public_id"
            ]
        )

    def memory(self, name: str) -> str:
        body = {"memory": {"name": name, "description": "shared notes"}}
        return str(self.ok(self.api.post("/memories", self.ada, body))["memory"]["memory_id"])

    def file(self, mem: str, path: str, content: str = "v0") -> dict[str, Any]:
        body = {"file": {"path": path, "content": content, **NEW}}
        file: dict[str, Any] = self.ok(self.api.post(f"/memories/{mem}/files", self.ada, body))["file"]
        return file

    def conversation(self) -> str:
        return self.api.conversation(self.ada, self.ws, answering_agent_public_id=self.alpha.public_id)

    def record(self, who: Who, content: str, **fields: Any) -> dict[str, Any]:
        body = {"record": {"type": "fact", "content": content, **fields}}
        rec: dict[str, Any] = self.ok(self.api.post(f"/workspaces/{self.ws}/records", who, body))["record"]
        return rec


@pytest.fixture(scope="module")
def metering() -> Iterator[None]:
    """The write budget on, high enough never to refuse: its metering is written as deployed."""
    set_budget("AGENT_MEMORY_WRITES_PER_MINUTE", "100000")
    try:
        yield
    finally:
        set_budget("AGENT_MEMORY_WRITES_PER_MINUTE", "off")


@pytest.fixture(scope="module")
def world(service: LocalService, metering: None, tmp_path_factory: pytest.TempPathFactory) -> World:
    service.reset()
    return build_world(Api(service.url, service.operator_key), tmp_path_factory.mktemp("repos"))


def build_world(api: Api, repos: Path) -> World:
    """A Human with a workspace, a member program answering a conversation, a second member Human and a
    definition agent; a synced Memory's repository lies under `repos`."""
    ada = api.account()
    ws = api.workspace(ada)
    alpha = api.agent(ada, "alpha")
    api.member(ada, ws, alpha)
    bob = api.human(ada, "bob")
    api.member(ada, ws, bob)
    conv = api.conversation(ada, ws, answering_agent_public_id=alpha.public_id)
    w = World(api, ada, bob, alpha, ws, conv, repos)
    w.ok(api.post("/agents", ada, {"agent": {"name": w.definition, "kind": "definition"}}))
    return w


# ---- the cases: one valid request per route ------------------------------------------------------------

NEW = {"expected_public_id": None, "expected_lock_version": None}


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # under /agent_api/v1
    who: Who | None
    body: Any = None
    headers: dict[str, str] | None = None


Case = Callable[[World], Request]


def _expect(pair: tuple[str, int]) -> dict[str, Any]:
    return {"expected_public_id": pair[0], "expected_lock_version": pair[1]}


def _unique(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}"


def _doors(w: World) -> dict[str, tuple[str, str, Who]]:
    """Each memory door: its URL, a root it writes, and who writes there."""
    return {
        "conversation": (conv_base(w.ws, w.conv), "conversation", w.ada),
        "workspace": (ws_base(w.ws), "workspace", w.ada),
        "profile": ("/profile/memory", "user", w.ada),
        "definition": (f"/profile/agents/{w.definition}/memory", "agent", w.ada),
    }


def _memory_verb(door: str, verb: str) -> Case:
    def case(w: World) -> Request:
        base, root, who = _doors(w)[door]
        path = f"{root}/{_unique(verb)}.md"
        if verb == "write":
            return Request("POST", base, who, {"memory": {"path": path, "content": "fresh", **NEW}})
        if verb == "review":
            # A version that reads like an injection waits for review: in a shared room someone else
            # wrote it, so its curator may release it; a private root's owner reviews its own rows.
            writer = w.bob if door in ("conversation", "workspace") else who
            flagged = created(w.api.write(writer, base, path, INJECTION))
            body = {"path": path, "lock_version": 0, "decision": "release", **_expect(flagged)}
            return Request("POST", f"{base}/review", who, {"memory": body})
        v0 = created(w.api.write(who, base, path, "ship friday"))
        if verb == "edit":
            body = {"path": path, "old_text": "friday", "new_text": "monday", **_expect(v0)}
        elif verb == "delete":
            body = {"path": path, **_expect(v0)}
        else:  # rollback, versions/redact: of the first version, under the second
            v1 = created(w.api.write(who, base, path, "ship monday", v0))
            body = {"path": path, "lock_version": 0, **_expect(v1)}
        return Request("POST", f"{base}/{verb}", who, {"memory": body})

    return case


def _post(path: Callable[[World], str], body: Callable[[World], Any] = lambda w: None) -> Case:
    return lambda w: Request("POST", path(w), w.ada, body(w))


def _fresh_human(w: World) -> str:
    return w.api.human(w.ada, _unique("h")).public_id


def _session(verb: str) -> Case:
    def case(w: World) -> Request:
        ex = w.execution()
        path = f"conversation/{_unique('s')}.md"
        if verb == "write":
            return Request(
                "POST", f"/executions/{ex}/files/write", w.alpha, {"file": {"path": path, "content": "x", **NEW}}
            )
        v0 = created(w.api.write(w.ada, conv_base(w.ws, w.conv), path, "ship friday"))
        file: dict[str, Any] = {"path": path, **_expect(v0)}
        if verb == "edit":
            file |= {"old_text": "friday", "new_text": "monday"}
        elif verb == "rename":
            file["new_path"] = f"conversation/{_unique('moved')}.md"
        return Request("POST", f"/executions/{ex}/files/{verb}", w.alpha, {"file": file})

    return case


def _memory_file(verb: str) -> Case:
    def case(w: World) -> Request:
        mem = w.memory(_unique("mem"))
        if verb == "write":
            body: dict[str, Any] = {"path": "a.md", "content": "x", **NEW}
            return Request("POST", f"/memories/{mem}/files", w.ada, {"file": body})
        f = w.file(mem, "a.md", "ship friday")
        pair = (f["public_id"], f["lock_version"])
        if verb == "edit":
            body = {"path": "a.md", "old_text": "friday", "new_text": "monday", **_expect(pair)}
        elif verb == "delete":
            body = {"path": "a.md", **_expect(pair)}
        elif verb == "lease":
            body = {"path": "a.md", "seconds": 60}
        else:  # rollback, versions/redact: of the first version, under the second
            again = w.ok(
                w.api.post(
                    f"/memories/{mem}/files", w.ada, {"file": {"path": "a.md", "content": "v1", **_expect(pair)}}
                )
            )["file"]
            body = {"path": "a.md", "lock_version": 0, **_expect((again["public_id"], again["lock_version"]))}
        return Request("POST", f"/memories/{mem}/files/{verb}", w.ada, {"file": body})

    return case


def _sync(w: World) -> Request:
    home = w.tmp / _unique("repo")
    home.mkdir()
    repo = bare(home)
    commit(repo, {"a.md": b"alpha\n"})
    body = {"memory": {"name": _unique("synced"), "source": {"git": {"url": url_of(repo)}}}}
    mem = w.ok(w.api.post("/memories", w.ada, body))["memory"]["memory_id"]
    commit(repo, {"a.md": b"alpha\nbeta\n"})
    return Request("POST", f"/memories/{mem}/sync", w.ada)


def _merge(w: World) -> Request:
    child = w.ok(w.api.post(f"{w.conv_url}/fork", w.ada))["conversation"]["public_id"]
    created(w.api.write(w.ada, conv_base(w.ws, child), f"conversation/{_unique('merged')}.md", "from the fork"))
    return Request("POST", f"/workspaces/{w.ws}/conversations/{child}/merge", w.ada, {"merge": {"into": "parent"}})


def _promote_into_workspace(w: World) -> Request:
    path = f"conversation/{_unique('plan')}.md"
    created(w.api.write(w.ada, conv_base(w.ws, w.conv), path, "ship friday"))
    source = {"conversation_public_id": w.conv, "path": path, "lock_version": 0}
    body = {"promote": {"source": source, "target_path": f"workspace/{_unique('promoted')}.md", **NEW}}
    return Request("POST", f"/workspaces/{w.ws}/memory/promote", w.ada, body)


def _promote_memory(w: World) -> Request:
    path = f"workspace/{_unique('guide')}.md"
    created(w.api.write(w.ada, ws_base(w.ws), path, "deploy on fridays"))
    source = {"workspace_public_id": w.ws, "path": path, "lock_version": 0}
    body = {"promote": {"source": source, "name": _unique("guide"), "description": "promoted notes"}}
    return Request("POST", "/memories/promote", w.ada, body)


def _conv_action(verb: str, body: Callable[[World], Any] = lambda w: None) -> Case:
    def case(w: World) -> Request:
        return Request("POST", f"/workspaces/{w.ws}/conversations/{w.conversation()}/{verb}", w.ada, body(w))

    return case


def _entry_delete(w: World) -> Request:
    key = _unique("k")
    url = f"{w.conv_url}/store_entries"
    w.ok(w.api.post(url, w.ada, {"entry": {"key": key, "value": 1, "expected_lock_version": None}}))
    return Request("POST", f"{url}/delete", w.ada, {"entry": {"key": key, "expected_lock_version": 0}})


def _record_verb(verb: str) -> Case:
    def case(w: World) -> Request:
        if verb == "review":
            rec = w.record(w.bob, INJECTION)
            return Request(
                "POST",
                f"/workspaces/{w.ws}/records/{rec['public_id']}/review",
                w.ada,
                {"review": {"decision": "release"}},
            )
        rec = w.record(w.ada, f"The staging host is {_unique('host')}.")
        url = f"/workspaces/{w.ws}/records/{rec['public_id']}"
        if verb == "update":
            return Request(
                "POST",
                url,
                w.ada,
                {"record": {"expected_lock_version": rec["lock_version"], "content": "The staging host moved."}},
            )
        return Request("POST", f"{url}/delete", w.ada, {"record": {"expected_lock_version": rec["lock_version"]}})

    return case


def _consolidate(w: World) -> Request:
    run = _unique("run")
    line = "user: I want the reports as PDF every Monday, not Excel."
    w.record(w.ada, line, layer="Session", type="raw", run_id=run, source_kind="user")
    return Request("POST", f"/workspaces/{w.ws}/records/consolidate", w.ada, {"consolidate": {"run_id": run}})


CASES: dict[str, Case] = {
    "create_account": lambda w: Request(
        "POST",
        "/accounts",
        None,
        {"account": {"name": "beta"}, "human": {"name": "eve"}},
        {"X-Operator-Key": w.api.operator_key},
    ),
    "create_human": _post(lambda w: "/humans", lambda w: {"human": {"name": "dee"}}),
    "rotate_human_credentials": _post(lambda w: f"/humans/{_fresh_human(w)}/credentials/rotate"),
    "revoke_human_credentials": _post(lambda w: f"/humans/{_fresh_human(w)}/credentials/revoke"),
    "create_workspace": _post(lambda w: "/workspaces", lambda w: {"workspace": {"name": "lab"}}),
    # An override hands the room's memory to another provider: a room of its own, so no other case is refused.
    "update_workspace": lambda w: Request(
        "PATCH",
        f"/workspaces/{w.api.workspace(w.ada, _unique('lab'))}",
        w.ada,
        {"workspace": {"tool_provider_overrides": {"nexus.memory": "acme"}}},
    ),
    "add_member": _post(
        lambda w: f"/workspaces/{w.ws}/members",
        lambda w: {"member": {"human_public_id": _fresh_human(w), "role": "viewer"}},
    ),
    "create_conversation": _post(lambda w: f"/workspaces/{w.ws}/conversations", lambda w: {"conversation": {}}),
    "archive_conversation": _conv_action("archive"),
    "fork_conversation": _post(lambda w: f"{w.conv_url}/fork"),
    "delete_conversation": _conv_action("delete"),
    "replace_memory_context": _conv_action(
        "memory_context", lambda w: {"memory_context": bindings(CONV, {**WORKSPACE, "name": "room"})}
    ),
    "create_agent": _post(lambda w: "/agents", lambda w: {"agent": {"name": _unique("scout"), "kind": "program"}}),
    "rotate_agent_credentials": _post(
        lambda w: f"/agents/{w.api.agent(w.ada, _unique('bot')).public_id}/credentials/rotate"
    ),
    "create_speaker": _post(
        lambda w: "/speakers", lambda w: {"speaker": {"name": _unique("visitor"), "agent_public_id": w.alpha.public_id}}
    ),
    "conversation_store_entry_write": _post(
        lambda w: f"{w.conv_url}/store_entries",
        lambda w: {"entry": {"key": _unique("k"), "value": {"a": 1}, "expected_lock_version": None}},
    ),
    "conversation_store_entry_delete": _entry_delete,
    "merge_conversation": _merge,
    **{
        f"{door}_memory_{name}": _memory_verb(door, verb)
        for door in ("conversation", "workspace", "profile", "definition")
        for name, verb in (
            ("write", "write"),
            ("edit", "edit"),
            ("delete", "delete"),
            ("rollback", "rollback"),
            ("version_redact", "versions/redact"),
            ("review", "review"),
        )
    },
    "workspace_memory_promote": _promote_into_workspace,
    "create_execution": lambda w: Request("POST", f"{w.conv_url}/executions", w.alpha, {"execution": {}}),
    "call_tool": lambda w: Request(
        "POST",
        f"/executions/{w.execution()}/tools/memory_write",
        w.alpha,
        {"input": {"path": f"conversation/{_unique('tool')}.md", "content": "from the model", **NEW}},
    ),
    "stop_execution": lambda w: Request("POST", f"/executions/{w.execution()}/stop", w.alpha, {}),
    **{f"execution_file_{verb}": _session(verb) for verb in ("write", "edit", "delete", "rename")},
    "create_memory": _post(lambda w: "/memories", lambda w: {"memory": {"name": _unique("runbooks")}}),
    "promote_memory": _promote_memory,
    "update_memory": lambda w: Request(
        "PATCH", f"/memories/{w.memory(_unique('mem'))}", w.ada, {"memory": {"description": "renamed notes"}}
    ),
    "archive_memory": lambda w: Request("POST", f"/memories/{w.memory(_unique('mem'))}/archive", w.ada),
    "delete_memory": lambda w: Request("POST", f"/memories/{w.memory(_unique('mem'))}/delete", w.ada),
    "sync_memory": _sync,
    **{f"memory_file_{verb}": _memory_file(verb) for verb in ("write", "edit", "delete", "rollback", "lease")},
    "memory_file_version_redact": _memory_file("versions/redact"),
    "update_agent": lambda w: Request(
        "PATCH",
        f"/agents/{w.alpha.public_id}",
        w.ada,
        {"agent": {"memories": [{"memory_id": w.memory(_unique("mem")), "mode": "readwrite"}]}},
    ),
    "records_append": _post(
        lambda w: f"/workspaces/{w.ws}/records",
        lambda w: {"record": {"type": "fact", "content": f"The build runs on {_unique('runner')}."}},
    ),
    "records_consolidate": _consolidate,
    "record_update": _record_verb("update"),
    "record_delete": _record_verb("delete"),
    "record_review": _record_verb("review"),
}


def _matches(route: RouteSpec, req: Request) -> bool:
    pattern = re.sub(r"{[^}]+}", "[^/]+", re.escape(route.path).replace(r"\{", "{").replace(r"\}", "}"))
    return req.method == route.method and re.fullmatch(pattern, f"{API}{req.path}") is not None


def _send(w: World, req: Request, key: str) -> requests.Response:
    return w.api.call(req.method, req.path, req.who, req.body, headers={**(req.headers or {}), "Idempotency-Key": key})


def _withheld(body: Any) -> Any:
    """A replayed answer: each secret field null, and the answer saying so."""
    if not isinstance(body, dict) or not any(body.get(k) for k in ("token", "secret")):
        return body
    return {**body, **{k: None for k in ("token", "secret") if body.get(k)}, "secret_withheld": True}


def test_every_mutating_route_has_a_case() -> None:
    assert set(CASES) == set(MUTATING), "a mutating route needs a case here (or a case names no route)"
    assert set(RECORDED_ALONE) <= set(MUTATING)


@pytest.mark.parametrize("name", sorted(MUTATING))
def test_a_keyed_change_commits_its_record_in_its_own_transaction_and_replays(world: World, name: str) -> None:
    route = MUTATING[name]
    req = CASES[name](world)
    assert _matches(route, req), f"{name}'s case sends {req.method} {req.path}"
    key = f"k-{uuid.uuid4()}"

    # When the change is sent once with a key
    with watched() as writes:
        first = _send(world, req, key)
    assert first.status_code in (route.status, *route.also), first.text
    assert "Idempotency-Replayed" not in first.headers

    # Then exactly one write carries the key's record, and it is the transaction that changes something
    carrying = [w for w in writes if any(k.startswith("IDEM#") for k in w.keys)]
    assert len(carrying) == 1, writes
    if name in RECORDED_ALONE:
        assert carrying[0].operation == "PutItem" and carrying[0].keys[0].startswith("IDEM#")
        assert len(writes) > 1, "the change itself was written"
    else:
        record = carrying[0]
        assert record.operation == "TransactWriteItems", writes
        assert sum(k.startswith("IDEM#") for k in record.keys) == 1
        assert not record.no_change, f"{name}'s record rides in a transaction that changes nothing: {record}"

    # When the very same request is sent again under the key
    with watched() as again:
        second = _send(world, req, key)

    # Then it answers the first answer (secrets withheld), says it is a replay, and writes nothing
    assert second.status_code == first.status_code, second.text
    assert second.headers.get("Idempotency-Replayed") == "true"
    assert (second.json() if second.content else None) == _withheld(first.json() if first.content else None)
    assert again == []
