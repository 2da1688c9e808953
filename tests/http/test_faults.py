"""Faults leave nothing half done: a fault at any AWS call of any verb is a clear 503, and nothing is torn.

Each case is one request through the local gateway (a memory verb, or a directory write). Its world is
built once and saved; a dry run records the AWS calls the request makes; then, for every call position N
and every kind of fault, storage is put back exactly as saved (every item and object: the same world, for
a fraction of building it again) and the request is sent with the fault injected at the N-th call by
botocore event hooks on the very clients the gateway's handlers use (`agent_memory.store.aws_clients()`).
The faults are what real AWS does past botocore's own retries:

- `throttle`: the call and every later one is throttled (ProvisionedThroughputExceededException, S3 SlowDown);
- `error`: a server-side 500 (InternalServerError, S3 InternalError);
- `read_timeout`, `connect_timeout`, `no_endpoint`: botocore's ReadTimeoutError, ConnectTimeoutError,
  EndpointConnectionError;
- `crash`: the call lands (a commit commits, an object is stored) and its answer is lost.

Then: the answer is 503 `storage_busy` (throttling) or `storage_unavailable` (everything else), with
Retry-After and no traceback; storage is consistent (every content_key names an object, version records
included, every #META count equals its document rows, a conversation's context_revision moved exactly
when its memory did); a write that did not land left no trace visible to readers; and the caller's retry
succeeds, except after a crash at the commit, where the documented contract holds: the retry with the same
pair is `stale_object` and a re-read shows the write.

The history verbs are cases too: rollback (the source's text fetched, then one commit that checks the
source still holds it), redaction (one commit, then the Query and the S3 DeleteObject that free the bytes
at once: a fault after the commit leaves the record redacted, the document intact and the object at most
left for the sweeper, never deleted while a row or record points at it; the retry answers the redacted
record again) and promote (the target's S3 PUT, then its commit).
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
from agent_memory.core.model import Anchor
from agent_memory.core.settings import settings
from agent_memory.store import CACHE, aws_clients
from agent_memory.store import keys as store_keys
from agent_memory.store.commit import PACING
from agent_memory_sdk.local.runtime import LocalService
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
    # What a case's `prepare` made: pairs and content keys its request and checks need.
    notes: dict[str, Any] = field(default_factory=dict)

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
    # For a write: whether its effect is visible, and the refusal of its repeat once it landed (a spent
    # pair is stale_object; a name taken by the first attempt is already_exists). None: the repeat succeeds
    # again (a redaction of a record already redacted answers that record).
    landed: Callable[[World], bool] | None = None
    replay: str | None = "stale_object"
    # Sets the case's stage on top of `build` (e.g. a second version, so there is history to act on).
    prepare: Callable[[World], None] | None = None
    # Holds after every send, faulted or not (e.g. the document a redaction scrubs is intact).
    holds: Callable[[World], None] | None = None
    # Holds after a run that went through from start to end: the dry run, and a retry of a send that left
    # nothing behind (e.g. a redaction's bytes are gone from S3 at once).
    clean: Callable[[World], None] | None = None
    # A send that landed changes what the next one does (a redaction of a record already redacted stops
    # before its commit), so past the first write each kind of fault gets a world of its own.
    alters: bool = False


_names = itertools.count()
PLAN = "conversation/plan.md"
_HISTORY = "a different text"


def _record(w: World, lock_version: int) -> dict[str, Any]:
    """plan.md's version record `lock_version`, as stored."""
    ddb, _ = aws_clients()
    pk, sk = store_keys.version(Anchor("conversation", w.conv), "plan.md", lock_version)
    item: dict[str, Any] = ddb.get_item(
        TableName=settings().table_name, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True
    )["Item"]
    return item


def _key(w: World, lock_version: int) -> str | None:
    """The content key plan.md's version record holds (None once redacted)."""
    ck = _record(w, lock_version).get("content_key")
    return None if ck is None else str(ck["S"])


def _current(w: World) -> tuple[str, tuple[str, int]]:
    """plan.md's text and pair, as storage holds them."""
    CACHE.clear()
    r = w.api.show(w.ada, w.base, PLAN)
    assert r.status_code == 200, r.text
    return r.json()["memory"]["content"], pair(r)


def _second_version(w: World) -> None:
    """plan.md gets a second version: v0 "hello world" is now history, v1 is current."""
    r = w.api.write(w.ada, w.base, PLAN, _HISTORY, w.plan)
    assert r.status_code == 201, r.text
    w.plan = pair(r)
    w.notes["k0"] = _key(w, 0)
    CACHE.clear()


def _shared_history(w: World) -> None:
    """v0 and v2 share one object (v2 rolled back to v0), v3 is current: v0's bytes have another holder."""
    _second_version(w)
    r = _version_change(w, "rollback", 0)
    assert r.status_code == 201, r.text
    w.plan = pair(r)
    r = w.api.write(w.ada, w.base, PLAN, "a third text", w.plan)
    assert r.status_code == 201, r.text
    w.plan = pair(r)
    assert _key(w, 2) == w.notes["k0"]
    CACHE.clear()


def _version_change(w: World, verb: str, lock_version: int) -> requests.Response:
    """A rollback (`rollback`) or redaction (`versions/redact`) of plan.md's version, holding w.plan."""
    body = {"path": PLAN, "lock_version": lock_version, "expected_public_id": w.plan[0]}
    body["expected_lock_version"] = w.plan[1]
    return w.api.post(f"{w.base}/{verb}", w.ada, {"memory": body})


def _redacted(w: World, lock_version: int) -> bool:
    item = _record(w, lock_version)
    return "content_key" not in item and "redacted_at" in item


def _intact(w: World, text: str) -> None:
    """plan.md is the document the case found: its text, at the pair the world holds."""
    assert _current(w) == (text, w.plan)


def _redaction_freed(w: World) -> None:
    # Nothing else held v0's bytes: they are gone from S3 at once, the record stays and says so
    assert w.notes["k0"] not in objects()
    shown = w.api.post(f"{w.base}/versions/show", w.ada, {"memory": {"path": PLAN, "lock_version": 0}})
    assert shown.status_code == 200, shown.text
    assert (shown.json()["version"]["redacted"], shown.json()["version"]["content"]) == (True, None)


def _redaction_kept_shared(w: World) -> None:
    # v2 still holds v0's bytes: the object stays, and v2 reads them
    assert w.notes["k0"] in objects() and _key(w, 2) == w.notes["k0"]
    CACHE.clear()
    shown = w.api.post(f"{w.base}/versions/show", w.ada, {"memory": {"path": PLAN, "lock_version": 2}})
    assert shown.status_code == 200, shown.text
    assert shown.json()["version"]["content"] == "hello world"


def _source_kept(w: World) -> None:
    # A rollback copies its source's key and never takes it from the source
    assert _key(w, 0) == w.notes["k0"]


def _shared_kept(w: World) -> None:
    _intact(w, "a third text")
    _redaction_kept_shared(w)


def _promote(w: World, source: dict[str, Any], target: str, expected: tuple[str, int] | None) -> requests.Response:
    body = {
        "source": source,
        "target_path": target,
        "expected_public_id": None if expected is None else expected[0],
        "expected_lock_version": None if expected is None else expected[1],
    }
    return w.api.post(f"{ws_base(w.ws)}/promote", w.ada, {"promote": body})


SKILL = "workspace/skills/howto"


def _skill(w: World) -> None:
    r = w.api.write(w.ada, ws_base(w.ws), SKILL, "# How to\n\nhand-written\n", description="how we work")
    assert r.status_code == 201, r.text
    w.notes["skill"] = pair(r)
    CACHE.clear()


def _skill_kept(w: World) -> None:
    # A promote appends to a skill: its hand-written text survives, whatever the fault
    text = _content(w, ws_base(w.ws), SKILL)
    assert text is not None and text.startswith("# How to\n\nhand-written\n"), text


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
    # ---- history: two reads, then the changes that start from a version ----
    "versions": Case(lambda w: w.api.post(f"{w.base}/versions", w.ada, {"memory": {"path": PLAN}}), 200),
    "version_show": Case(
        lambda w: w.api.post(f"{w.base}/versions/show", w.ada, {"memory": {"path": PLAN, "lock_version": 0}}), 200
    ),
    # v0's text back as v2: the commit checks v0 still holds its bytes, and never takes them away
    "rollback": Case(
        lambda w: _version_change(w, "rollback", 0),
        201,
        lambda w: _current(w)[0] == "hello world",
        prepare=_second_version,
        holds=_source_kept,
    ),
    # v0's bytes have no other holder: the commit, then the Query that tells so and the DeleteObject
    "redact": Case(
        lambda w: _version_change(w, "versions/redact", 0),
        200,
        lambda w: _redacted(w, 0),
        replay=None,
        prepare=_second_version,
        holds=lambda w: _intact(w, _HISTORY),
        clean=_redaction_freed,
        alters=True,
    ),
    # v2 (a rollback to v0) still holds v0's bytes: the Query sees it, and nothing is deleted
    "redact_shared": Case(
        lambda w: _version_change(w, "versions/redact", 0),
        200,
        lambda w: _redacted(w, 0),
        replay=None,
        prepare=_shared_history,
        holds=_shared_kept,
        clean=_redaction_kept_shared,
        alters=True,
    ),
    # A conversation's version into the workspace's document: two contexts, the source's GET, the PUT, the commit
    "promote": Case(
        lambda w: _promote(
            w, {"conversation_public_id": w.conv, "path": PLAN, "lock_version": 0}, "workspace/team.md", w.team
        ),
        201,
        lambda w: _content(w, ws_base(w.ws), "workspace/team.md") == "hello world",
        holds=lambda w: _intact(w, "hello world"),
    ),
    # Into a skill: the skill's own text is read too, and the promoted text is appended, never clobbering it
    "promote_skill": Case(
        lambda w: _promote(w, {"path": "workspace/team.md", "lock_version": 0}, SKILL, w.notes["skill"]),
        201,
        lambda w: "the team" in (_content(w, ws_base(w.ws), SKILL) or ""),
        prepare=_skill,
        holds=_skill_kept,
    ),
}


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """The contention retries do not sleep: these tests are about outcomes, not pacing."""
    monkeypatch.setattr(PACING, "sleep", lambda _: None)


@dataclass(frozen=True)
class Saved:
    """Storage as it was: every item, and every content object with its bytes."""

    items: dict[tuple[str, str], dict[str, Any]]
    objects: dict[str, bytes]


def save() -> Saved:
    _, s3 = aws_clients()
    items = {(it["pk"]["S"], it["sk"]["S"]): it for it in scan()}
    bucket = settings().bucket_name
    return Saved(items, {k: s3.get_object(Bucket=bucket, Key=k)["Body"].read() for k in objects()})


def restore(saved: Saved) -> None:
    """Storage exactly as saved: the same world (same ids, same rows), for a fraction of building it again.

    Only what differs is written back. An object that exists in both is the same bytes: content keys are
    written once. No process cache can disagree: content is cleared, execution rows are immutable.
    """
    ddb, s3 = aws_clients()
    table, bucket = settings().table_name, settings().bucket_name
    now = {(it["pk"]["S"], it["sk"]["S"]): it for it in scan()}
    for pk, sk in now.keys() - saved.items.keys():
        ddb.delete_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": sk}})
    for key, item in saved.items.items():
        if now.get(key) != item:
            ddb.put_item(TableName=table, Item=item)
    stored = objects()
    for name in stored - saved.objects.keys():
        s3.delete_object(Bucket=bucket, Key=name)
    for name in saved.objects.keys() - stored:
        s3.put_object(Bucket=bucket, Key=name, Body=saved.objects[name])
    CACHE.clear()


def world(service: LocalService, api: Api, case: Case) -> World:
    """Empty storage, the usual world, and the case's own stage on top."""
    service.reset()
    w = build(api)
    if case.prepare is not None:
        case.prepare(w)
    return w


def dry_run(w: World, case: Case) -> list[str]:
    """The AWS calls one clean run of the case makes, in order."""
    CACHE.clear()
    with injected(Injector()) as inj:
        r = case.act(w)
    assert r.status_code == case.ok, r.text
    if case.clean is not None:
        case.clean(w)
    if case.holds is not None:
        case.holds(w)
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
    if case.holds is not None:
        case.holds(w)
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
    if landed and case.replay is not None:
        assert code(again) == (409, case.replay), (where, again.text)
    else:
        assert again.status_code == case.ok, (where, again.text)
    # Either way the write is in effect now, once
    assert case.landed is None or case.landed(w), where
    if not landed and case.clean is not None:
        case.clean(w)
    if case.holds is not None:
        case.holds(w)
    assert_consistent()


MATRIX: dict[str, list[str]] = {}  # case -> the AWS calls it makes, each faulted in every kind


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_fault_at_any_call_is_a_clear_503_and_leaves_storage_consistent(
    service: LocalService, quiet: None, name: str
) -> None:
    case = CASES[name]
    # One world per case, put back exactly as it was before each position's sends
    w = world(service, Api(service.url, service.operator_key), case)
    saved = save()
    calls = dry_run(w, case)
    assert calls, f"{name} made no AWS call"
    for at in range(len(calls)):
        # The faults that let nothing through from call `at` on, one after another on one world (each
        # must leave it as it was), then the caller's retry
        restore(saved)
        where = ""
        for kind in KINDS:
            if kind != "crash":
                if case.alters and wrote(calls[:at]) and where:
                    restore(saved)  # the last send's write went through: start again
                where = inject(w, case, kind, at, calls)
                if case.landed is not None and not wrote(calls[:at]):
                    assert not case.landed(w), where
                if case.alters and case.landed is not None and "dynamodb.TransactWriteItems" in calls[:at]:
                    assert case.landed(w), where  # the commit went through before the fault: it holds
        retry(w, case, where)
        # A crash after call `at` went through, on the world as it was
        restore(saved)
        retry(w, case, inject(w, case, "crash", at, calls))
    MATRIX[name] = calls
