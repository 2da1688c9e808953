"""Concurrency proofs: real threads race over HTTP through the local gateway into serialised moto.

moto is serialised per request (as DynamoDB is atomic per request), so any lost update or extra
winner seen here is the service's own race, not the emulator's.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
import requests

from ..support import Api, Who, code, conv_base, listed, pair, ws_base

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
