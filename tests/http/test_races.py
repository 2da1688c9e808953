"""Concurrency proofs: real threads race over HTTP through the local gateway into serialised moto.

moto is serialised per request (as DynamoDB is atomic per request), so any lost update or extra
winner seen here is the service's own race, not the emulator's.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
import requests
from agent_memory.store import CACHE, aws_clients, keys

from ..support import Api, Who, code, conv_base, created, listed, pair, ws_base
from .test_faults import assert_consistent, objects, scan

T = TypeVar("T")
WORKERS = 32
_local = threading.local()


def client(api: Api) -> Api:
    """One HTTP session per thread: a requests.Session is not safe to share between threads."""
    mine: Api | None = getattr(_local, "api", None)
    if mine is None or mine.url != api.url:
        mine = Api(api.url, api.operator_key)
        _local.api = mine
    return mine


def race(n: int, fn: Callable[[int], T], *, workers: int = WORKERS) -> list[T]:
    """Run fn(0..n-1) on real threads; when every call has its own thread they start together."""
    barrier = threading.Barrier(n) if n <= workers else None

    def go(i: int) -> T:
        if barrier is not None:
            barrier.wait(timeout=30)
        return fn(i)

    with ThreadPoolExecutor(max_workers=min(n, workers)) as pool:
        return list(pool.map(go, range(n)))


def outcomes(responses: list[requests.Response]) -> Counter[tuple[int, str | None]]:
    return Counter(code(r) for r in responses)


def revision(api: Api, who: Who, ws: str, conv: str) -> int:
    return int(api.show_conversation(who, ws, conv)["context_revision"])


@pytest.fixture
def world(api: Api) -> tuple[Who, str, str]:
    ada = api.account()
    ws = api.workspace(ada)
    return ada, ws, api.conversation(ada, ws)


@pytest.mark.parametrize("round_", range(3))
def test_100_concurrent_creates_fill_exactly_64(api: Api, world: tuple[Who, str, str], round_: int) -> None:
    # Given an empty conversation (moto is reset for every round)
    ada, ws, conv = world
    base = conv_base(ws, conv)
    before = revision(api, ada, ws, conv)

    # When 100 threads each create a distinct document under it at once
    def create(i: int) -> requests.Response:
        return client(api).write(ada, base, f"conversation/note-{i:03d}.md", f"note {i}")

    got = outcomes(race(100, create))

    # Then exactly 64 land, the rest are told the scope is full, and nothing else happens
    assert got == {(201, None): 64, (422, "memory_full"): 36}, got
    assert len(listed(api, ada, base)) == 64
    assert revision(api, ada, ws, conv) == before + 64


@pytest.mark.parametrize("door", ["conversation", "workspace"])
def test_16_concurrent_replaces_of_one_version_have_one_winner(
    api: Api, world: tuple[Who, str, str], door: str
) -> None:
    # Given a document at lock_version 0 (the conversation door commits a transaction with the
    # revision bump, the workspace door a single conditional put: both paths are raced)
    ada, ws, conv = world
    base = conv_base(ws, conv) if door == "conversation" else ws_base(ws)
    path = f"{door}/plan.md"
    created = api.write(ada, base, path, "v0")
    assert created.status_code == 201, created.text
    seen = pair(created)
    before = revision(api, ada, ws, conv)

    # When 16 threads replace it, all holding the same expected pair
    def replace(i: int) -> requests.Response:
        return client(api).write(ada, base, path, f"written by {i}", seen)

    responses = race(16, replace)

    # Then exactly one wins, the others are stale, and the document is the winner's at lock_version 1
    assert outcomes(responses) == {(201, None): 1, (409, "stale_object"): 15}
    (winner,) = [i for i, r in enumerate(responses) if r.status_code == 201]
    shown = api.show(ada, base, path).json()["memory"]
    assert shown["content"] == f"written by {winner}"
    assert (shown["public_id"], shown["lock_version"]) == (seen[0], 1)
    assert revision(api, ada, ws, conv) == before + (1 if door == "conversation" else 0)


def test_concurrent_creates_of_one_absent_path_have_one_winner(api: Api, world: tuple[Who, str, str]) -> None:
    # Given a conversation where conversation/claim.md does not exist
    ada, ws, conv = world
    base = conv_base(ws, conv)

    # When 16 threads create it at once with null/null
    def create(i: int) -> requests.Response:
        return client(api).write(ada, base, "conversation/claim.md", f"claimed by {i}")

    responses = race(16, create)

    # Then one creates it, the others are stale, and the revision moved once
    assert outcomes(responses) == {(201, None): 1, (409, "stale_object"): 15}
    (winner,) = [i for i, r in enumerate(responses) if r.status_code == 201]
    shown = api.show(ada, base, "conversation/claim.md").json()["memory"]
    assert shown["content"] == f"claimed by {winner}"
    assert shown["lock_version"] == 0
    assert listed(api, ada, base) == ["conversation/claim.md"]
    assert revision(api, ada, ws, conv) == 1
    # And the refused creates did not count against the bound: 63 more fit, the next one does not
    for i in range(63):
        assert api.write(ada, base, f"conversation/more-{i:02d}.md", "x").status_code == 201
    assert code(api.write(ada, base, "conversation/one-too-many.md", "x")) == (422, "memory_full")


def test_read_modify_write_loops_lose_no_update(api: Api, world: tuple[Who, str, str]) -> None:
    # Given a shared log document
    ada, ws, conv = world
    base = conv_base(ws, conv)
    assert api.write(ada, base, "conversation/log.md", "log").status_code == 201
    before = revision(api, ada, ws, conv)
    writers, attempts = 8, Counter[int]()

    # When 8 threads each append their own line, re-reading and retrying whenever they are stale
    def append(i: int) -> int:
        me = client(api)
        while True:
            attempts[i] += 1
            assert attempts[i] < 200, "a writer starved"
            shown = me.show(ada, base, "conversation/log.md")
            assert shown.status_code == 200, shown.text
            content = shown.json()["memory"]["content"]
            r = me.write(ada, base, "conversation/log.md", f"{content}\nline from writer {i}", pair(shown))
            if r.status_code == 201:
                return int(r.json()["memory"]["lock_version"])
            assert code(r) == (409, "stale_object"), r.text

    versions = race(writers, append)

    # Then every line is there exactly once, and each success took its own version
    final = api.show(ada, base, "conversation/log.md").json()["memory"]
    lines = final["content"].split("\n")
    assert lines[0] == "log"
    assert Counter(lines[1:]) == Counter(f"line from writer {i}" for i in range(writers))
    assert sorted(versions) == list(range(1, writers + 1))
    assert final["lock_version"] == writers
    assert revision(api, ada, ws, conv) == before + writers


@pytest.mark.parametrize("round_", range(3))
def test_concurrent_edit_and_delete_of_one_version_have_one_winner(
    api: Api, world: tuple[Who, str, str], round_: int
) -> None:
    # Given a document both callers have read
    ada, ws, conv = world
    base = conv_base(ws, conv)
    created = api.write(ada, base, "conversation/todo.md", "buy milk")
    seen = pair(created)
    before = revision(api, ada, ws, conv)

    # When one thread edits it while another deletes it, with the same expected pair
    def act(i: int) -> requests.Response:
        me = client(api)
        if i == 0:
            return me.edit(ada, base, "conversation/todo.md", "milk", "bread", seen)
        return me.delete(ada, base, "conversation/todo.md", seen)

    edit, delete = race(2, act)

    # Then exactly one of them wins, the other is stale, and the state is the winner's
    results = {code(edit), code(delete)}
    assert results in ({(200, None), (409, "stale_object")}, {(204, None), (409, "stale_object")}), results
    shown = api.show(ada, base, "conversation/todo.md")
    if edit.status_code == 200:
        assert shown.json()["memory"]["content"] == "buy bread"
        assert shown.json()["memory"]["lock_version"] == 1
    else:
        assert code(shown) == (404, "memory_not_found")
        assert listed(api, ada, base) == []
    assert revision(api, ada, ws, conv) == before + 1


# ---- history: rollback, redaction and fork against each other ------------------------------------------


def _version_change(
    me: Api, who: Who, base: str, verb: str, path: str, lock_version: int, seen: tuple[str, int]
) -> requests.Response:
    """A rollback (`rollback`) or redaction (`versions/redact`) of one version, holding the pair `seen`."""
    body = {"path": path, "lock_version": lock_version, "expected_public_id": seen[0], "expected_lock_version": seen[1]}
    return me.post(f"{base}/{verb}", who, {"memory": body})


def _history(api: Api, who: Who, base: str, path: str) -> list[dict[str, Any]]:
    r = api.post(f"{base}/versions", who, {"memory": {"path": path, "limit": 100}})
    assert r.status_code == 200, r.text
    versions: list[dict[str, Any]] = r.json()["versions"]
    return versions


def _two_versions(api: Api, who: Who, base: str, path: str) -> tuple[tuple[str, int], str]:
    """v0 "first" (history) and v1 "second" (current): v1's pair, and the content key v0's record holds."""
    v0 = created(api.write(who, base, path, "first"))
    v1 = created(api.write(who, base, path, "second", v0))
    (key,) = [it["content_key"]["S"] for it in scan() if it["sk"]["S"] == keys.version_sk(path.split("/", 1)[1], 0)]
    return v1, key


def _read(api: Api, who: Who, base: str, path: str) -> dict[str, Any]:
    """The document as storage holds it (not as this process's content cache remembers it)."""
    CACHE.clear()
    r = api.show(who, base, path)
    assert r.status_code == 200, r.text
    shown: dict[str, Any] = r.json()["memory"]
    return shown


@pytest.mark.parametrize("door", ["conversation", "workspace"])
def test_16_concurrent_rollbacks_of_one_pair_have_one_winner(api: Api, world: tuple[Who, str, str], door: str) -> None:
    # Given a document with two versions, every caller holding v1's pair
    ada, ws, conv = world
    base = conv_base(ws, conv) if door == "conversation" else ws_base(ws)
    path = f"{door}/plan.md"
    seen, _ = _two_versions(api, ada, base, path)
    before = revision(api, ada, ws, conv)

    # When 16 threads roll it back to v0 at once
    responses = race(16, lambda i: _version_change(client(api), ada, base, "rollback", path, 0, seen))

    # Then exactly one wins, the others are stale, and the history has exactly one rollback version
    assert outcomes(responses) == {(201, None): 1, (409, "stale_object"): 15}
    shown = _read(api, ada, base, path)
    assert (shown["content"], shown["public_id"], shown["lock_version"]) == ("first", seen[0], 2)
    history = _history(api, ada, base, path)
    assert [(v["lock_version"], v["operation"], v["rolled_back_from"]) for v in history] == [
        (2, "rollback", 0),
        (1, "write", None),
        (0, "write", None),
    ]
    assert revision(api, ada, ws, conv) == before + (1 if door == "conversation" else 0)
    assert_consistent()


@pytest.mark.parametrize("round_", range(4))
def test_a_rollback_racing_a_redaction_of_its_source_never_leaves_a_version_without_its_bytes(
    api: Api, world: tuple[Who, str, str], round_: int
) -> None:
    # Given v0 (whose bytes nothing else holds) and v1, both callers holding v1's pair
    ada, ws, conv = world
    base = conv_base(ws, conv)
    path = "conversation/secret.md"
    seen, k0 = _two_versions(api, ada, base, path)

    # When one thread rolls back to v0 while another redacts v0
    def act(i: int) -> requests.Response:
        return _version_change(client(api), ada, base, "rollback" if i == 0 else "versions/redact", path, 0, seen)

    rollback, redaction = race(2, act)

    # Then exactly one of them wins
    got = (code(rollback), code(redaction))
    assert got in (((201, None), (409, "stale_object")), ((409, "memory_version_redacted"), (200, None))), got
    shown = _read(api, ada, base, path)
    v0 = api.post(f"{base}/versions/show", ada, {"memory": {"path": path, "lock_version": 0}}).json()["version"]
    if rollback.status_code == 201:
        # The rollback won: the new current version holds v0's bytes, which are still in S3, and v0 is intact
        assert (shown["content"], shown["lock_version"]) == ("first", 2)
        assert k0 in objects()
        assert (v0["redacted"], v0["content"]) == (False, "first")
    else:
        # The redaction won: v0's bytes are gone at once, and the document is v1 still
        assert (shown["content"], shown["lock_version"]) == ("second", 1)
        assert k0 not in objects()
        assert (v0["redacted"], v0["content"]) == (True, None)
        assert [v["operation"] for v in _history(api, ada, base, path)] == ["write", "write"]
    # And never a row or record whose content object is missing
    assert_consistent()


@pytest.mark.parametrize("round_", range(3))
def test_a_write_racing_a_rollback_of_one_pair_has_one_winner(
    api: Api, world: tuple[Who, str, str], round_: int
) -> None:
    # Given v0 and v1, both callers holding v1's pair
    ada, ws, conv = world
    base = conv_base(ws, conv)
    path = "conversation/plan.md"
    seen, _ = _two_versions(api, ada, base, path)
    before = revision(api, ada, ws, conv)

    # When one thread writes a new text while another rolls back to v0
    def act(i: int) -> requests.Response:
        me = client(api)
        if i == 0:
            return me.write(ada, base, path, "third", seen)
        return _version_change(me, ada, base, "rollback", path, 0, seen)

    write, rollback = race(2, act)

    # Then exactly one lands, as version 2, and the other is stale
    assert {code(write), code(rollback)} == {(201, None), (409, "stale_object")}
    shown = _read(api, ada, base, path)
    winner = ("third", "write") if write.status_code == 201 else ("first", "rollback")
    assert (shown["content"], shown["lock_version"]) == (winner[0], 2)
    assert [v["operation"] for v in _history(api, ada, base, path)] == [winner[1], "write", "write"]
    assert revision(api, ada, ws, conv) == before + 1
    assert_consistent()


def test_concurrent_redactions_of_one_version_all_answer_the_redacted_record(
    api: Api, world: tuple[Who, str, str]
) -> None:
    # Given v0 and v1
    ada, ws, conv = world
    base = conv_base(ws, conv)
    path = "conversation/secret.md"
    seen, k0 = _two_versions(api, ada, base, path)

    # When 8 threads redact v0 at once, all holding v1's pair (a redaction moves no pair)
    responses = race(8, lambda i: _version_change(client(api), ada, base, "versions/redact", path, 0, seen))

    # Then every one answers the redacted record, the bytes are gone, and the document is untouched
    assert outcomes(responses) == {(200, None): 8}
    assert all(r.json()["version"]["redacted"] for r in responses)
    assert k0 not in objects()
    shown = _read(api, ada, base, path)
    assert (shown["content"], shown["public_id"], shown["lock_version"]) == ("second", seen[0], 1)
    assert_consistent()


@pytest.mark.parametrize(
    ("paused_at", "copied", "freed"),
    [
        # Held before it marks the parent: the redaction reads no mark and frees v0's bytes, and the fork
        # then reads rows that are past v0
        ("UpdateItem", "fixed", True),
        # Held after the mark, before it reads the rows: the redaction keeps the bytes (for the sweeper)
        ("Query", "fixed", False),
        # Held after it read the rows (v0 current), before it writes the copies: the bytes must stay
        ("TransactWriteItems", "the secret", False),
    ],
)
def test_a_redaction_while_a_fork_is_in_flight_never_deletes_bytes_the_fork_copies(
    api: Api, world: tuple[Who, str, str], paused_at: str, copied: str, freed: bool
) -> None:
    # Given a parent with one document, and a fork of it held at its first call of one kind
    ada, ws, conv = world
    base = conv_base(ws, conv)
    path = "conversation/secret.md"
    v0 = created(api.write(ada, base, path, "the secret"))
    (k0,) = [it["content_key"]["S"] for it in scan() if it["sk"]["S"] == keys.version_sk("secret.md", 0)]
    held, go = threading.Event(), threading.Event()

    def hold(**_: Any) -> None:
        # Nothing else is in flight until the fork is held, so its first call of this kind is the fork's
        if not held.is_set():
            held.set()
            go.wait(30)

    forked: list[requests.Response] = []
    fork = threading.Thread(
        target=lambda: forked.append(client(api).post(f"/workspaces/{ws}/conversations/{conv}/fork", ada))
    )
    ddb, _ = aws_clients()
    ddb.meta.events.register(f"before-call.dynamodb.{paused_at}", hold, unique_id="test-races-hold")
    try:
        fork.start()
        assert held.wait(30)
        # When, while it is held, the secret is overwritten and its version redacted
        v1 = created(api.write(ada, base, path, "fixed", v0))
        assert code(_version_change(api, ada, base, "versions/redact", path, 0, v1)) == (200, None)
    finally:
        go.set()
        fork.join(30)
        ddb.meta.events.unregister(f"before-call.dynamodb.{paused_at}", unique_id="test-races-hold")

    # Then the fork lands and its child reads what it copied: never a row whose bytes are gone
    (answer,) = forked
    assert answer.status_code == 201, answer.text
    child = answer.json()["conversation"]["public_id"]
    assert _read(api, ada, conv_base(ws, child), path)["content"] == copied
    # The bytes went at once only where no fork could hold them
    assert (k0 not in objects()) is freed
    assert_consistent()
