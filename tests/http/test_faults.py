"""Faults leave nothing half done: a fault at any AWS call of any verb is a clear 503, and nothing is torn.

Each case is one request through the local gateway (a memory verb, or a directory write). A dry run
records the AWS calls it makes; then, for every call position N and every kind of fault, storage is reset,
the case's world is built again, and the request is sent with the fault injected at the N-th call by
botocore event hooks on the very clients the gateway's handlers use (`agent_memory.store.aws_clients()`).
The faults are what real AWS does past botocore's own retries:

- `throttle`: the call and every later one is throttled (ProvisionedThroughputExceededException, S3 SlowDown);
- `error`: a server-side 500 (InternalServerError, S3 InternalError);
- `read_timeout`, `connect_timeout`, `no_endpoint`: botocore's ReadTimeoutError, ConnectTimeoutError,
  EndpointConnectionError;
- `crash`: the call lands (a commit commits, an object is stored) and its answer is lost.

Then: the answer is 503 `storage_busy` (throttling) or `storage_unavailable` (everything else), with
Retry-After and no traceback; storage is consistent (every content_key names an object, every #META count
equals its document rows, a conversation's context_revision moved exactly when its memory did); a write
that did not land left no trace visible to readers; and the caller's retry succeeds, except after a crash
at the commit, where the documented contract holds: the retry with the same pair is `stale_object` and a
re-read shows the write.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from agent_memory.local.runtime import LocalService
from agent_memory.model import Anchor
from agent_memory.settings import settings
from agent_memory.store import CACHE, aws_clients
from agent_memory.store import keys as store_keys
from agent_memory.store.errors import PACING
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from ..support import CONV, WORKSPACE, Api, Who, bindings, code, conv_base, pair, ws_base

KINDS = ["throttle", "error", "read_timeout", "connect_timeout", "no_endpoint", "crash"]
EXPECTED = {kind: "storage_busy" if kind == "throttle" else "storage_unavailable" for kind in KINDS}
WRITES = {"PutObject", "TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem"}


# ---- the injector ------------------------------------------------------------------------------------


class Injector:
    """Counts the service's AWS calls; from call `at` on, answers them with fault `kind`."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.kind: str | None = None
        self.at = -1
        self.lock = threading.Lock()

    def before(self, event_name: str, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, Any] | None:
        _hook, service, operation = event_name.split(".", 2)
        with self.lock:
            index = len(self.calls)
            self.calls.append(f"{service}.{operation}")
        # Remembered on the call itself: parallel calls (a listing's queries) finish in any order.
        context["test_fault_index"] = index
        if self.kind is None or self.kind == "crash" or index < self.at:
            return None
        url = f"https://{service}.us-east-1.amazonaws.com/"
        if self.kind == "read_timeout":
            raise ReadTimeoutError(endpoint_url=url)
        if self.kind == "connect_timeout":
            raise ConnectTimeoutError(endpoint_url=url)
        if self.kind == "no_endpoint":
            raise EndpointConnectionError(endpoint_url=url)
        s3 = service == "s3"
        if self.kind == "throttle":
            status, err = (503, "SlowDown") if s3 else (400, "ProvisionedThroughputExceededException")
        else:
            status, err = (500, "InternalError") if s3 else (500, "InternalServerError")
        parsed = {"Error": {"Code": err, "Message": "injected"}, "ResponseMetadata": {"HTTPStatusCode": status}}
        return AWSResponse(url, status, HTTPHeaders(), None), parsed

    def after(self, event_name: str, context: dict[str, Any], **_: Any) -> None:
        # The call went through and its effect is stored; only its answer is lost on the way back.
        if self.kind == "crash" and context.get("test_fault_index") == self.at:
            raise ReadTimeoutError(endpoint_url=f"https://{event_name.split('.')[1]}.us-east-1.amazonaws.com/")


@contextmanager
def injected(inj: Injector) -> Iterator[Injector]:
    clients = aws_clients()
    for c in clients:
        c.meta.events.register("before-call", inj.before, unique_id="test-faults-before")
        c.meta.events.register("after-call", inj.after, unique_id="test-faults-after")
    try:
        yield inj
    finally:
        for c in clients:
            c.meta.events.unregister("before-call", unique_id="test-faults-before")
            c.meta.events.unregister("after-call", unique_id="test-faults-after")


# ---- what "consistent" means in storage ------------------------------------------------------------


def scan() -> list[dict[str, Any]]:
    ddb, _ = aws_clients()
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": settings().table_name, "ConsistentRead": True}
    while True:
        resp = ddb.scan(**kwargs)
        items += resp.get("Items", [])
        if "LastEvaluatedKey" not in resp:
            return items
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def objects() -> set[str]:
    _, s3 = aws_clients()
    out: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=settings().bucket_name, Prefix="content/"):
        out.update(o["Key"] for o in page.get("Contents", []))
    return out


@dataclass(frozen=True)
class Snapshot:
    """Per conversation: its context_revision, its memory_context and its document pointers."""

    conversations: dict[str, tuple[int, str, frozenset[tuple[str, str, str]]]]


def snapshot() -> Snapshot:
    items = scan()
    docs: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    for it in items:
        if it["sk"]["S"].startswith(store_keys.DOC):
            docs[it["pk"]["S"]].add((it["sk"]["S"], it["public_id"]["S"], it["lock_version"]["N"]))
    out = {}
    for it in items:
        pk = it["pk"]["S"]
        if pk.startswith(store_keys.CONVERSATION) and "context_revision" in it:
            conv = pk.removeprefix(store_keys.CONVERSATION)
            anchor_pk = store_keys.anchor_pk(Anchor("conversation", conv))
            out[conv] = (int(it["context_revision"]["N"]), str(it.get("memory_context")), frozenset(docs[anchor_pk]))
    return Snapshot(out)


def assert_consistent(before: Snapshot | None = None) -> None:
    items = scan()
    # No pointer to missing content
    stored = objects()
    dangling = [it["content_key"]["S"] for it in items if "content_key" in it and it["content_key"]["S"] not in stored]
    assert not dangling, dangling
    # No #META counter drift (and so no half fork: the child's count and its rows came in one transaction)
    counted: Counter[str] = Counter()
    for it in items:
        if it["sk"]["S"].startswith(store_keys.DOC):
            counted[it["pk"]["S"]] += 1
    metas = {it["pk"]["S"]: int(it["doc_count"]["N"]) for it in items if it["sk"]["S"] == "#META"}
    for pk in set(counted) | set(metas):
        assert metas.get(pk, 0) == counted[pk], (pk, metas.get(pk), counted[pk])
    # No context_revision moved without its write, and no memory change without its move
    if before is not None:
        after = snapshot()
        for conv, (rev, ctx, docs) in before.conversations.items():
            rev2, ctx2, docs2 = after.conversations[conv]
            changed = docs2 != docs or ctx2 != ctx
            assert rev2 - rev == (1 if changed else 0), (conv, rev, rev2, changed)


# ---- the cases ---------------------------------------------------------------------------------------


@dataclass
class World:
    api: Api
    ada: Who
    ws: str
    conv: str
    plan: tuple[str, int]
    team: tuple[str, int]
    bob: Who
    helper: Who

    @property
    def base(self) -> str:
        return conv_base(self.ws, self.conv)


def build(api: Api) -> World:
    ada = api.account()
    ws = api.workspace(ada)
    helper = api.agent(ada, "helper")
    api.member(ada, ws, helper)
    conv = api.conversation(ada, ws, answering_agent_public_id=helper.public_id)
    base = conv_base(ws, conv)
    plan = api.write(ada, base, "conversation/plan.md", "hello world")
    assert plan.status_code == 201, plan.text
    team = api.write(ada, ws_base(ws), "workspace/team.md", "the team")
    assert team.status_code == 201, team.text
    bob = api.human(ada, "bob")
    # As in a fresh container: reads of content reach S3, so its GETs are faulted too
    CACHE.clear()
    return World(api, ada, ws, conv, pair(plan), pair(team), bob, helper)


def _content(w: World, base: str, path: str) -> str | None:
    CACHE.clear()  # another container: what storage holds, not what this process remembers
    r = w.api.show(w.ada, base, path)
    if r.status_code == 404:
        return None
    assert r.status_code == 200, r.text
    text: str = r.json()["memory"]["content"]
    return text


@dataclass(frozen=True)
class Case:
    act: Callable[[World], requests.Response]
    ok: int
    # For a write whose repeat is refused once it landed: whether its effect is visible, and that refusal
    # (a spent pair is stale_object; a name taken by the first attempt is already_exists).
    landed: Callable[[World], bool] | None = None
    replay: str = "stale_object"


_names = itertools.count()

CASES: dict[str, Case] = {
    "write_create": Case(
        lambda w: w.api.write(w.ada, w.base, "conversation/new.md", "fresh"),
        201,
        lambda w: _content(w, w.base, "conversation/new.md") == "fresh",
    ),
    "write_replace": Case(
        lambda w: w.api.write(w.ada, w.base, "conversation/plan.md", "v1", w.plan),
        201,
        lambda w: _content(w, w.base, "conversation/plan.md") == "v1",
    ),
    "edit": Case(
        lambda w: w.api.edit(w.ada, w.base, "conversation/plan.md", "world", "there", w.plan),
        200,
        lambda w: _content(w, w.base, "conversation/plan.md") == "hello there",
    ),
    "delete": Case(
        lambda w: w.api.delete(w.ada, w.base, "conversation/plan.md", w.plan),
        204,
        lambda w: _content(w, w.base, "conversation/plan.md") is None,
    ),
    "workspace_replace": Case(
        lambda w: w.api.write(w.ada, ws_base(w.ws), "workspace/team.md", "v1", w.team),
        201,
        lambda w: _content(w, ws_base(w.ws), "workspace/team.md") == "v1",
    ),
    "show": Case(lambda w: w.api.show(w.ada, w.base, "conversation/plan.md"), 200),
    "list": Case(lambda w: w.api.ls(w.ada, w.base), 200),
    "grep": Case(lambda w: w.api.grep(w.ada, w.base, "hello|team"), 200),
    "memory_block": Case(
        lambda w: w.api.post(f"/workspaces/{w.ws}/conversations/{w.conv}/memory_block", w.ada, {}), 200
    ),
    "fork": Case(lambda w: w.api.post(f"/workspaces/{w.ws}/conversations/{w.conv}/fork", w.ada), 201),
    "create_account": Case(
        lambda w: w.api.post(
            "/accounts",
            json={"account": {"name": "beta"}, "human": {"name": "eve"}},
            headers={"X-Operator-Key": w.api.operator_key},
        ),
        201,
    ),
    "create_human": Case(lambda w: w.api.post("/humans", w.ada, {"human": {"name": "cy"}}), 201),
    "create_workspace": Case(lambda w: w.api.post("/workspaces", w.ada, {"workspace": {"name": "lab"}}), 201),
    "add_member": Case(
        lambda w: w.api.post(
            f"/workspaces/{w.ws}/members", w.ada, {"member": {"human_public_id": w.bob.public_id, "role": "member"}}
        ),
        201,
    ),
    "update_workspace": Case(
        lambda w: w.api.call(
            "PATCH", f"/workspaces/{w.ws}", w.ada, {"workspace": {"tool_provider_overrides": {"nexus.memory": "x"}}}
        ),
        200,
    ),
    "create_conversation": Case(lambda w: w.api.post(f"/workspaces/{w.ws}/conversations", w.ada, {}), 201),
    # A new value each time: a replace bumps the revision even when the value is the same, and the check
    # that a revision moves only with its memory must be able to see each write
    "memory_context": Case(
        lambda w: w.api.post(
            f"/workspaces/{w.ws}/conversations/{w.conv}/memory_context",
            w.ada,
            {"memory_context": bindings(CONV, {**WORKSPACE, "name": f"w{next(_names)}"})},
        ),
        200,
    ),
    "archive": Case(lambda w: w.api.post(f"/workspaces/{w.ws}/conversations/{w.conv}/archive", w.ada), 200),
    "create_agent": Case(lambda w: w.api.post("/agents", w.ada, {"agent": {"name": "scout", "kind": "program"}}), 201),
    "create_definition": Case(
        lambda w: w.api.post("/agents", w.ada, {"agent": {"name": "tutor", "kind": "definition"}}),
        201,
        lambda w: any(
            (it["pk"]["S"], it["sk"]["S"]) == store_keys.definition(w.ada.public_id, "tutor") for it in scan()
        ),
        replay="already_exists",
    ),
    "rotate_credentials": Case(lambda w: w.api.post(f"/agents/{w.helper.public_id}/credentials/rotate", w.ada), 200),
    "create_speaker": Case(
        lambda w: w.api.post("/speakers", w.ada, {"speaker": {"name": "v", "agent_public_id": w.helper.public_id}}),
        201,
    ),
    "create_execution": Case(
        lambda w: w.api.post(f"/workspaces/{w.ws}/conversations/{w.conv}/executions", w.helper, {"execution": {}}),
        201,
    ),
}


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """The contention retries do not sleep: these tests are about outcomes, not pacing."""
    monkeypatch.setattr(PACING, "sleep", lambda _: None)


def dry_run(service: LocalService, case: Case) -> list[str]:
    """The AWS calls one clean run of the case makes, in order."""
    service.reset()
    w = build(Api(service.url, service.operator_key))
    with injected(Injector()) as inj:
        r = case.act(w)
    assert r.status_code == case.ok, r.text
    return inj.calls


def inject(w: World, case: Case, kind: str, at: int, calls: list[str]) -> str:
    """Send the case's request with `kind` at call `at`; check the answer and storage. Answers `where`."""
    before = snapshot()
    CACHE.clear()  # each send makes the same calls as the dry run, content GETs included
    inj = Injector()
    inj.kind, inj.at = kind, at
    with injected(inj):
        r = case.act(w)
    where = f"{kind} at call {at} ({calls[at]})"
    # A clear 503 with its code and Retry-After, never a traceback
    assert code(r) == (503, EXPECTED[kind]), (where, r.status_code, r.text)
    assert r.headers.get("Retry-After") == "1", where
    assert "Traceback" not in r.text
    # Storage is consistent, and a conversation's revision moved only with its memory
    assert_consistent(before)
    if kind != "crash" and not wrote(calls[:at]):
        # No write went through before the fault, and no call from it on: nothing a reader sees has changed
        assert snapshot() == before, where
    return where


def wrote(calls: list[str]) -> bool:
    """Whether any of these calls is a write (some verbs read again after their write, for the answer)."""
    return any(c.split(".")[1] in WRITES for c in calls)


def retry(w: World, case: Case, where: str) -> None:
    """The caller's retry succeeds; after a write that landed, the spent pair (or taken name) is refused."""
    landed = case.landed(w) if case.landed is not None else False
    CACHE.clear()
    again = case.act(w)
    if landed:
        assert code(again) == (409, case.replay), (where, again.text)
        assert case.landed is not None and case.landed(w), where
    else:
        assert again.status_code == case.ok, (where, again.text)
    assert_consistent()


MATRIX: dict[str, list[str]] = {}  # case -> the AWS calls it makes, each faulted in every kind


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_fault_at_any_call_is_a_clear_503_and_leaves_storage_consistent(
    service: LocalService, quiet: None, name: str
) -> None:
    case = CASES[name]
    calls = dry_run(service, case)
    assert calls, f"{name} made no AWS call"
    api = Api(service.url, service.operator_key)
    for at in range(len(calls)):
        # The faults that let nothing through from call `at` on, one after another on one world (each
        # must leave it as it was), then the caller's retry
        service.reset()
        w = build(api)
        where = ""
        for kind in KINDS:
            if kind != "crash":
                where = inject(w, case, kind, at, calls)
                if case.landed is not None and not wrote(calls[:at]):
                    assert not case.landed(w), where
        retry(w, case, where)
        # A crash after call `at` went through, on a world of its own
        service.reset()
        w = build(api)
        retry(w, case, inject(w, case, "crash", at, calls))
    MATRIX[name] = calls
