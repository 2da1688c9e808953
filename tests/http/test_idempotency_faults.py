"""Idempotency-Key at every crash point: the record commits in the same transaction as the change it guards.

For each kind of mutation (tests/http/test_idempotency.py's cases), a clean keyed run shows how many
TransactWriteItems it sends and what it adds to storage. Then, on a fresh world for each of those
transactions and each kind of fault, the keyed request is sent with the fault injected by botocore event
hooks on the service's own clients (`agent_memory.store.aws_clients()`), and sent again with the same key:

- a fault BEFORE the transaction (the connection to DynamoDB fails): the answer is 503 and nothing is
  recorded, so the retry runs, succeeds, and the change lands once;
- a crash AFTER the transaction landed (its answer is lost on the way back, or the function dies): the
  answer is 503 or 500; when that transaction was the decisive commit, the retry REPLAYS the answer the
  commit recorded (`Idempotency-Replayed: true`) and writes nothing at all; an earlier transaction of the
  same request (a fork's history records) carries no record, so the retry runs again.

In every case the change lands exactly once: the live rows (a fork's records whose child never landed
are not live) and the content objects rows reference grow by what one clean run adds, and whatever the
retry answers names rows that exist.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests
from agent_memory.api.errors import CATALOGUE
from agent_memory.edges.tools.lambda_entry import handler as tool_lambda
from agent_memory.store import CACHE
from agent_memory.store.commit import PACING
from agent_memory_sdk.local.runtime import LocalService
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

from ..support import Api, code, ws_base
from .test_idempotency import (
    CASES,
    NEW,
    REPLAYED,
    Storage,
    World,
    body,
    hooked,
    idem_rows,
    key,
    keyed,
    kind,
    make_world,
    storage,
    table,
    withheld,
)
from .test_rate_limit import set_budget

# Every kind in CASES, but Bob rotating his own token: once its answer is lost, the only token Bob holds
# is the one it retired, so his retry is rightly 401 (his first Human rotates him again).
FAULTED = sorted(name for name in CASES if name != "rotate_own_credentials")
CRASHES = {"answer_lost": 503, "function_died": 500}


class LambdaDied(Exception):
    """The function stops right after a call landed (out of time, out of memory): no answer of its own."""


class AtCommit:
    """Faults the `at`-th TransactWriteItems of a request: before it is sent, or after it landed."""

    def __init__(self, when: str, at: int, crash: str = "answer_lost") -> None:
        self.when, self.at, self.crash = when, at, crash
        self.lock = threading.Lock()
        self.sent = 0
        self.fired = False
        # The transactions that carried an idempotency record, by index
        self.carried: list[int] = []

    def before(self, event_name: str, context: dict[str, Any], params: dict[str, Any], **_: Any) -> None:
        with self.lock:
            index = self.sent
            self.sent += 1
            if b'"IDEM#' in params["body"]:
                self.carried.append(index)
        context["test_idem_commit_index"] = index
        if self.when == "before" and index == self.at:
            self.fired = True
            raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com/")

    def after(self, event_name: str, context: dict[str, Any], **_: Any) -> None:
        if self.when == "after" and context.get("test_idem_commit_index") == self.at:
            self.fired = True
            if self.crash == "function_died":
                raise LambdaDied("the function died after its commit landed")
            raise ReadTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com/")


@contextmanager
def faulted(inj: AtCommit) -> Iterator[AtCommit]:
    with (
        hooked("before-call.dynamodb.TransactWriteItems", inj.before, "test-idem-fault-before"),
        hooked("after-call.dynamodb.TransactWriteItems", inj.after, "test-idem-fault-after"),
    ):
        yield inj


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """The contention retries do not sleep: these tests are about outcomes, not pacing."""
    monkeypatch.setattr(PACING, "sleep", lambda _: None)


# ---- what "landed once" means --------------------------------------------------------------------------


def live(s: Storage) -> Counter[str]:
    """The rows a reader can reach, by kind, and the content objects some row references ("s3").

    A fork's history records whose child never landed and an object whose pointer never committed are
    left for the sweeper: nobody sees them, so they are not a second change."""
    convs = {pk.removeprefix("CONV#") for pk, _ in s.rows if pk.startswith("CONV#")}

    def alive(pk: str) -> bool:
        parts = pk.split("#")
        return not (parts[:2] == ["ANCHOR", "conversation"] and parts[2] not in convs)

    # The write budget's meter rows are counters per minute, not changes (a minute may turn meanwhile)
    out = Counter(kind(pk, sk) for pk, sk in s.rows if alive(pk) and not pk.startswith("RATE#"))
    referenced = {str(row["content_key"]) for row in s.rows.values() if row.get("content_key")}
    out["s3"] = len(referenced & set(s.objects))
    return out


def added(before: Storage, after: Storage) -> Counter[str]:
    delta = live(after)
    delta.subtract(live(before))
    return Counter({k: v for k, v in delta.items() if v})


PREFIXES = {
    "conversation": "CONV#",
    "workspace": "WS#",
    "execution": "EXEC#",
    "human": "HUMAN#",
    "agent": "AGENT#",
    "speaker": "SPEAKER#",
    "account": "ACCOUNT#",
}


def truthful(w: World, r: requests.Response) -> None:
    """What an answer names exists as it says."""
    out = body(r)
    if not isinstance(out, dict):
        return
    rows = table()
    for name, prefix in PREFIXES.items():
        value = out.get(name)
        if isinstance(value, dict) and "public_id" in value:
            assert (f"{prefix}{value['public_id']}", prefix.strip("#")) in rows, (name, value)
    doc = out.get("memory") or (out.get("data") if out.get("tool") == "memory_write" else None)
    if isinstance(doc, dict) and "path" in doc:
        door = {"conversation": w.base, "workspace": ws_base(w.ws), "user": "/profile/memory"}[
            doc["path"].split("/")[0]
        ]
        CACHE.clear()
        shown = w.api.show(w.ada, door, doc["path"])
        assert shown.status_code == 200, shown.text
        now = shown.json()["memory"]
        assert (now["public_id"], now["lock_version"], now["content_sha256"]) == (
            doc["public_id"],
            doc["lock_version"],
            doc["content_sha256"],
        )


def told(r: requests.Response) -> tuple[int, str | None]:
    """The fault an answer tells: its status and code, or, for a tool call (a 200 whose result tells the
    model), the status of the code its result names. A 503 says when to come back."""
    out = body(r)
    if r.status_code == 200 and isinstance(out, dict) and out.get("tool") and out.get("is_error"):
        return CATALOGUE[out["code"]].status, out["code"]
    if r.status_code == 503:
        assert r.headers.get("Retry-After") == "1", r.headers
    return code(r)


def clean_run(service: LocalService, name: str) -> tuple[int, Counter[str]]:
    """How many transactions the keyed request sends, and what it adds, on a world of its own."""
    service.reset()
    w = make_world(Api(service.url, service.operator_key))
    send = CASES[name].prepare(w)
    start = storage()
    inj = AtCommit("never", -1)
    with faulted(inj):
        r = send(key())
    assert r.status_code == CASES[name].status, r.text
    assert inj.sent >= 1, f"{name} sent no transaction: its record has nothing to ride in"
    # The record rides in exactly one transaction, the last: the change's decisive commit
    assert inj.carried == [inj.sent - 1], (name, inj.carried, inj.sent)
    return inj.sent, added(start, storage())


@pytest.mark.parametrize("name", FAULTED)
def test_a_fault_before_any_commit_records_nothing_and_the_retry_runs_once(
    service: LocalService, quiet: None, name: str
) -> None:
    before_each_commit(service, name)


@pytest.mark.parametrize("crash", sorted(CRASHES))
@pytest.mark.parametrize("name", FAULTED)
def test_a_crash_after_the_commit_landed_replays_on_retry_and_writes_nothing_twice(
    service: LocalService, quiet: None, name: str, crash: str
) -> None:
    after_each_commit(service, name, crash)


@pytest.fixture
def metering() -> Iterator[None]:
    """The write budget on, as deployed: directory changes and executions spend it in a transaction of
    their own ahead of the change, memory changes in their commit."""
    set_budget("AGENT_MEMORY_WRITES_PER_MINUTE", "1000")
    try:
        yield
    finally:
        set_budget("AGENT_MEMORY_WRITES_PER_MINUTE", "off")


METERED = ["conversation_write_create", "create_workspace", "create_execution", "fork", "create_agent_program"]


@pytest.mark.parametrize("name", METERED)
def test_with_the_write_budget_on_the_record_rides_only_in_the_decisive_commit(
    service: LocalService, quiet: None, metering: None, name: str
) -> None:
    before_each_commit(service, name)
    after_each_commit(service, name, "answer_lost")


def before_each_commit(service: LocalService, name: str) -> None:
    case = CASES[name]
    commits, once = clean_run(service, name)
    for at in range(commits):
        where = f"{name}: connection refused before transaction {at + 1} of {commits}"
        service.reset()
        w = make_world(Api(service.url, service.operator_key))
        send = case.prepare(w)
        k = key()
        start = storage()
        # When the request fails before that transaction is sent
        with faulted(AtCommit("before", at)) as inj:
            failed = send(k)
        assert inj.fired, where
        assert told(failed) == (503, "storage_unavailable"), (where, failed.text)
        # Then no answer was recorded, and nothing a reader sees changed
        assert idem_rows() == [], where
        assert added(start, storage()) == Counter(), where
        # When the caller retries with the same key, it runs (no replay) and succeeds
        CACHE.clear()
        again = send(k)
        assert again.status_code == case.status, (where, again.text)
        assert REPLAYED not in again.headers, where
        truthful(w, again)
        # And the change landed exactly once
        assert added(start, storage()) == once, where
        # And from now on that key replays the retry's answer
        third = send(k)
        assert (third.status_code, third.headers.get(REPLAYED)) == (case.status, "true"), where
        assert body(third) == withheld(body(again), case.secrets), where


def after_each_commit(service: LocalService, name: str, crash: str) -> None:
    case = CASES[name]
    commits, once = clean_run(service, name)
    for at in range(commits):
        decisive = at == commits - 1
        where = f"{name}: {crash} after transaction {at + 1} of {commits}"
        service.reset()
        w = make_world(Api(service.url, service.operator_key))
        send = case.prepare(w)
        k = key()
        start = storage()
        # When the transaction lands but the request dies before answering
        with faulted(AtCommit("after", at, crash)) as inj:
            lost = send(k)
        assert inj.fired, where
        assert told(lost)[0] == CRASHES[crash], (where, lost.text)
        assert "Traceback" not in lost.text
        if decisive:
            # Then the decisive commit carried the record: the change and its answer are stored together
            assert len(idem_rows()) == 1, where
            assert added(start, storage()) == once, where
        else:
            # An earlier transaction (history records written ahead of a fork) carried no record
            assert idem_rows() == [], where
        landed = storage()
        # When the caller retries with the same key
        CACHE.clear()
        again = send(k)
        assert again.status_code == case.status, (where, again.text)
        truthful(w, again)
        if decisive:
            # Then it is the recorded answer, replayed, and nothing at all was written again
            assert again.headers.get(REPLAYED) == "true", where
            assert storage() == landed, where
        else:
            assert REPLAYED not in again.headers, where
        # And the change landed exactly once
        assert added(start, storage()) == once, where
        # And the key keeps answering that same answer
        third = send(k)
        assert (third.status_code, third.headers.get(REPLAYED)) == (case.status, "true"), where
        replayed = again.headers.get(REPLAYED) == "true"
        assert body(third) == (body(again) if replayed else withheld(body(again), case.secrets)), where


@pytest.fixture
def world(api: Api) -> World:
    return make_world(api)


def test_the_record_read_failing_is_a_503_that_records_nothing(world: World, quiet: None) -> None:
    # The first batch read (the caller's token and the key's record) gets no answer
    k = key()
    payload = {"memory": {"path": "conversation/new.md", "content": "fresh", **NEW}}
    fired: list[int] = []

    def down(event_name: str, **_: Any) -> None:
        if not fired:
            fired.append(1)
            raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com/")

    before = storage()
    with hooked("before-call.dynamodb.BatchGetItem", down, "test-idem-read-down"):
        r = world.api.post(world.base, world.ada, payload, headers=keyed(k))
    assert code(r) == (503, "storage_unavailable")
    assert storage() == before
    again = world.api.post(world.base, world.ada, payload, headers=keyed(k))
    assert again.status_code == 201 and REPLAYED not in again.headers


@pytest.mark.parametrize("crash", sorted(CRASHES))
def test_the_tool_function_replays_a_keyed_call_whose_answer_was_lost_after_its_commit(
    world: World, quiet: None, crash: str
) -> None:
    ex = world.execution()
    event = {
        "execution": ex["public_id"],
        "tool": "memory_write",
        "input": {"path": "conversation/tool.md", "content": "once", **NEW},
        "idempotency_key": key(),
        "secret": ex["secret"],
    }
    with faulted(AtCommit("after", 0, crash)) as inj:
        lost = tool_lambda(event)
    assert inj.fired
    if crash == "answer_lost":
        # The model is told storage did not answer (a result, not a refusal of the call); nothing recorded
        # that answer, since it is not final
        assert (lost["is_error"], lost["code"]) == (True, "storage_unavailable"), lost
    else:
        assert lost["error"]["code"] == "internal_error", lost
    landed = storage()
    # The runtime invokes it again with the same key: the first result, not stale_object, and no write
    again = tool_lambda(event)
    assert (again["is_error"], again["code"], again["data"]["lock_version"]) == (False, None, 0), again
    assert storage() == landed


def test_a_fault_while_recording_a_refusal_is_a_503_and_the_retry_records_it(world: World, quiet: None) -> None:
    # A refusal's record is stored after it, in a request of its own: when that request gets no answer,
    # the caller is told storage did not answer (a clean 503, never an escaped error), and its retry,
    # which must not succeed either, records the refusal
    k = key()
    create = {"memory": {"path": "conversation/plan.md", "content": "mine", **NEW}}

    def down(event_name: str, **_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com/")

    before = storage()
    with hooked("before-call.dynamodb.PutItem", down, "test-idem-record-down"):
        r = world.api.post(world.base, world.ada, create, headers=keyed(k))
    assert told(r) == (503, "storage_unavailable"), r.text
    assert storage() == before
    again = world.api.post(world.base, world.ada, create, headers=keyed(k))
    assert code(again) == (409, "stale_object") and REPLAYED not in again.headers
    third = world.api.post(world.base, world.ada, create, headers=keyed(k))
    assert code(third) == (409, "stale_object") and third.headers.get(REPLAYED) == "true"
