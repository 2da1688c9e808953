"""The write meters on the wire: spent before the change, outside its commit, exact under racing writers.

A mutation spends the caller's, its account's and its address's meters, one conditional UpdateItem each,
before its own commit is sent; the commit then carries only the change's own items. These tests watch the
requests the service builds (a `before-parameter-build` hook on its own clients) and race real threads
through the local gateway into serialised moto (tests/http/test_races.py says why that proves the service's
behaviour, not the emulator's).
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests
from agent_memory.core.settings import settings
from agent_memory.edges.services import reset_services
from agent_memory.store import aws_clients

from ..support import Api, code, conv_base, listed, pair
from .histories import objects, run_sweep
from .test_races import client, race
from .test_rate_limit import metered, set_budget
from .world import scan_table

BUDGETS = (
    "AGENT_MEMORY_WRITES_PER_MINUTE",
    "AGENT_MEMORY_ACCOUNT_WRITES_PER_MINUTE",
    "AGENT_MEMORY_ORIGIN_WRITES_PER_MINUTE",
)
WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


@contextmanager
def shipped_limits() -> Iterator[None]:
    """The three budgets at the limits a deployment ships with (none set: settings' defaults)."""
    for variable in BUDGETS:
        os.environ.pop(variable, None)
    settings.cache_clear()
    reset_services()
    assert (settings().writes_per_minute, settings().account_writes_per_minute) == (600, 6000)
    assert settings().origin_writes_per_minute == 6000
    try:
        yield
    finally:
        for variable in BUDGETS:
            set_budget(variable, "off")


@contextmanager
def watched() -> Iterator[list[tuple[str, list[str]]]]:
    """Every DynamoDB write the service sends while the block runs: its operation and its items' keys."""
    seen: list[tuple[str, list[str]]] = []

    def note(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "TransactWriteItems":
            items = [next(iter(entry.values())) for entry in params["TransactItems"]]
            seen.append((model.name, [str((i.get("Key") or i["Item"])["pk"]["S"]) for i in items]))
        elif model.name in WRITES:
            seen.append((model.name, [str((params.get("Key") or params.get("Item") or {}).get("pk", {}).get("S"))]))

    clients = aws_clients()
    for c in clients:
        c.meta.events.register("before-parameter-build.dynamodb", note, unique_id="test-meters")
    try:
        yield seen
    finally:
        for c in clients:
            c.meta.events.unregister("before-parameter-build.dynamodb", unique_id="test-meters")


def meters(seen: list[tuple[str, list[str]]]) -> list[str]:
    return [keys[0] for op, keys in seen if op == "UpdateItem" and keys[0].startswith("RATE#")]


def test_a_write_under_the_shipped_limits_commits_no_meter_item(api: Api) -> None:
    # Given a caller writing to its conversation with the budgets off
    ada = api.account()
    ws = api.workspace(ada)
    conv = api.conversation(ada, ws)
    base = conv_base(ws, conv)
    with watched() as off:
        assert api.write(ada, base, "conversation/off.md", "x").status_code == 201
    # When it writes again under the limits a deployment ships with
    with shipped_limits(), watched() as on:
        assert api.write(ada, base, "conversation/on.md", "x").status_code == 201
    # Then its commit is the same transaction, item for item, with no meter in it
    commit_off = [keys for op, keys in off if op == "TransactWriteItems"]
    commit_on = [keys for op, keys in on if op == "TransactWriteItems"]
    assert len(commit_on) == 1 and len(commit_on[0]) == len(commit_off[0])
    assert not any(k.startswith("RATE#") for k in commit_on[0])
    # And the budget was spent beside it: one UpdateItem per meter (the caller's, its account's, its
    # address's), and nothing else was written
    spent = meters(on)
    assert len(spent) == 3 and len(set(spent)) == 3
    assert any("account:" in k for k in spent) and any("origin:" in k for k in spent)
    assert Counter(op for op, _ in on) == {"TransactWriteItems": 1, "UpdateItem": 3}


@pytest.mark.parametrize("variable", BUDGETS)
def test_writers_racing_at_a_limit_get_exactly_the_limit_through(api: Api, variable: str) -> None:
    # Given a caller (its account, its address) with nothing spent this minute
    ada = api.account()
    ws = api.workspace(ada)
    conv = api.conversation(ada, ws)
    base = conv_base(ws, conv)
    revision = api.show_conversation(ada, ws, conv)["context_revision"]
    limit, writers = 5, 16
    with metered(variable):
        set_budget(variable, str(limit))

        # When 16 writes of different files race on real threads against a limit of 5 a minute
        def write(i: int) -> requests.Response:
            return client(api).write(ada, base, f"conversation/r{i}.md", "x")

        answers = race(writers, write)
    # Then exactly 5 land and every other is 429 rate_limited with its wait
    assert Counter(code(r) for r in answers) == {(201, None): limit, (429, "rate_limited"): writers - limit}
    assert all(r.headers["Retry-After"] for r in answers if r.status_code == 429)
    # And the refused ones changed nothing: only the 5 files exist, and the revision moved 5 times
    landed = {f"conversation/r{i}.md" for i, r in enumerate(answers) if r.status_code == 201}
    assert set(listed(api, ada, base)) == landed
    assert api.show_conversation(ada, ws, conv)["context_revision"] == revision + limit


def test_a_refused_write_sends_nothing_but_its_meters(api: Api) -> None:
    # Given a caller whose budget this minute is spent
    ada = api.account()
    ws = api.workspace(ada)
    conv = api.conversation(ada, ws)
    base = conv_base(ws, conv)
    with metered("AGENT_MEMORY_WRITES_PER_MINUTE"):
        set_budget("AGENT_MEMORY_WRITES_PER_MINUTE", "1")
        assert api.write(ada, base, "conversation/first.md", "x").status_code == 201
        # When it writes once more
        with watched() as seen:
            refused = api.write(ada, base, "conversation/late.md", "x")
    # Then it is refused by its meter before any change is sent: no commit, no other write
    assert code(refused) == (429, "rate_limited")
    assert [op for op, _ in seen] == ["UpdateItem"] and len(meters(seen)) == 1
    assert api.show(ada, base, "conversation/late.md").status_code == 404


def test_a_content_writes_meters_go_out_with_its_upload(api: Api) -> None:
    # Given a caller writing under the shipped limits, and hooks on the service's own clients that hold the
    # upload until the three meters are being sent and each meter until the upload is being sent
    ada = api.account()
    ws = api.workspace(ada)
    conv = api.conversation(ada, ws)
    base = conv_base(ws, conv)
    put_sent, meters_sent = threading.Event(), threading.Event()
    sent: list[str] = []
    waited_out: list[str] = []

    def at_put(**_: Any) -> None:
        put_sent.set()
        if not meters_sent.wait(timeout=3):
            waited_out.append("put")

    def at_update(params: dict[str, Any], **_: Any) -> None:
        if not str(params["Key"]["pk"]["S"]).startswith("RATE#"):
            return
        sent.append(params["Key"]["pk"]["S"])
        if len(sent) == 3:
            meters_sent.set()
        if not put_sent.wait(timeout=3):
            waited_out.append("meter")

    ddb, s3 = aws_clients()
    hooks = [
        (s3, "before-parameter-build.s3.PutObject", at_put),
        (ddb, "before-parameter-build.dynamodb.UpdateItem", at_update),
    ]
    with shipped_limits():
        for c, event, hook in hooks:
            c.meta.events.register(event, hook, unique_id="test-overlap")
        try:
            # When it writes a document
            written = api.write(ada, base, "conversation/together.md", "x")
        finally:
            for c, event, _ in hooks:
                c.meta.events.unregister(event, unique_id="test-overlap")
    # Then it lands, and neither side ever waited for the other to finish: the upload and the three meters
    # were in flight together (sent one after the other, one of them would have waited out its 3 s)
    assert written.status_code == 201
    assert len(sent) == 3 and waited_out == []


def test_a_content_write_refused_by_its_meter_leaves_no_document_and_no_version(api: Api) -> None:
    # Given a caller whose budget this minute is spent, with a document already written
    ada = api.account()
    ws = api.workspace(ada)
    conv = api.conversation(ada, ws)
    base = conv_base(ws, conv)
    with metered("AGENT_MEMORY_WRITES_PER_MINUTE"):
        set_budget("AGENT_MEMORY_WRITES_PER_MINUTE", "1")
        first = api.write(ada, base, "conversation/kept.md", "one")
        assert first.status_code == 201
        rows, stored = _history(conv), objects()
        revision = api.show_conversation(ada, ws, conv)["context_revision"]
        # When it creates a document, and replaces the one it has (each uploads its version while its meters
        # are sent)
        created = api.write(ada, base, "conversation/late.md", "late")
        replaced = api.write(ada, base, "conversation/kept.md", "two", pair(first))
    # Then both answer 429 rate_limited with their wait, in the body and in Retry-After
    for refused in (created, replaced):
        assert code(refused) == (429, "rate_limited")
        wait = refused.json()["error"]["details"]["retry_after_seconds"]
        assert refused.headers["Retry-After"] == str(wait) and 0 < wait <= 60
    # And neither left a document, a version record or a revision behind: the kept one is still version 0
    assert api.show(ada, base, "conversation/late.md").status_code == 404
    assert pair(api.show(ada, base, "conversation/kept.md")) == pair(first)
    assert _history(conv) == rows
    assert api.show_conversation(ada, ws, conv)["context_revision"] == revision
    # And the versions they uploaded meanwhile are objects nothing references, which the sweeper removes
    uploaded = set(objects()) - set(stored)
    assert len(uploaded) == 2
    run_sweep()
    assert not uploaded & set(objects())
    assert api.show(ada, base, "conversation/kept.md").json()["memory"]["content"] == "one"


def _history(conv: str) -> list[dict[str, Any]]:
    """The conversation anchor's document and version rows."""
    return sorted(
        (
            i
            for i in scan_table()
            if i["pk"] == f"ANCHOR#conversation#{conv}" and str(i["sk"]).startswith(("DOC#", "VER#"))
        ),
        key=lambda i: str(i["sk"]),
    )
