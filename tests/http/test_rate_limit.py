"""The ordinary caller budget: each caller's memory writes per minute, refused 429 rate_limited past it."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from agent_memory.core.settings import settings
from agent_memory.edges.services import reset_services

from ..support import Api, code, conv_base, ws_base

BUDGET = 3


def set_budget(variable: str, value: str) -> None:
    os.environ[variable] = value
    settings.cache_clear()
    reset_services()


@contextmanager
def metered(variable: str) -> Iterator[None]:
    """A budget of BUDGET changes a minute on one meter, for the block's duration."""
    set_budget(variable, str(BUDGET))
    # The budget is counted per wall-clock minute: start well inside one so the test cannot straddle two.
    if time.time() % 60 > 45:
        time.sleep(61 - time.time() % 60)
    try:
        yield
    finally:
        set_budget(variable, "off")


@pytest.fixture
def budget(api: Api) -> Iterator[Api]:
    with metered("AGENT_MEMORY_WRITES_PER_MINUTE"):
        yield api


def test_a_caller_past_its_write_budget_is_rate_limited_and_nothing_changes(budget: Api) -> None:
    api = budget
    # Given a caller that has spent its budget on accepted changes (the workspace and conversation count)
    ada = api.account()
    ws = api.workspace(ada)
    conv = api.conversation(ada, ws)
    base = conv_base(ws, conv)
    for i in range(BUDGET - 2):
        assert api.write(ada, base, f"conversation/{i}.md", "x").status_code == 201
    revision = api.show_conversation(ada, ws, conv)["context_revision"]
    # When it writes once more, through either door
    refused = api.write(ada, base, "conversation/late.md", "x")
    refused_ws = api.write(ada, ws_base(ws), "workspace/late.md", "x")
    # Then both are 429 rate_limited with a wait in seconds, and nothing was written or bumped
    assert code(refused) == (429, "rate_limited")
    assert code(refused_ws) == (429, "rate_limited")
    wait = refused.json()["error"]["details"]["retry_after_seconds"]
    assert 0 < wait <= 60
    # And the wait is also HTTP's own Retry-After header, which clients and proxies read
    assert refused.headers["Retry-After"] == str(wait)
    assert api.show(ada, base, "conversation/late.md").status_code == 404
    assert api.show(ada, ws_base(ws), "workspace/late.md").status_code == 404
    assert api.show_conversation(ada, ws, conv)["context_revision"] == revision
    # And reads are not metered
    assert api.show(ada, base, "conversation/0.md").status_code == 200


def test_the_budget_is_each_callers_own(budget: Api) -> None:
    api = budget
    # Given one caller that has spent its budget in a shared workspace
    ada = api.account()
    bob = api.human(ada)
    ws = api.workspace(ada)
    api.member(ada, ws, bob)
    # (creating bob, the workspace and his membership spent three of Ada's writes)
    set_budget("AGENT_MEMORY_WRITES_PER_MINUTE", str(BUDGET + 3))
    for i in range(BUDGET):
        assert api.write(ada, ws_base(ws), f"workspace/a{i}.md", "x").status_code == 201
    assert code(api.write(ada, ws_base(ws), "workspace/a-late.md", "x")) == (429, "rate_limited")
    # Then another caller still writes
    assert api.write(bob, ws_base(ws), "workspace/b.md", "x").status_code == 201


def test_every_mutation_spends_the_callers_budget(budget: Api) -> None:
    api = budget
    # Given a caller that has spent its budget on directory changes and a write
    ada = api.account()
    ws = api.workspace(ada)
    conv = api.conversation(ada, ws)
    assert api.write(ada, conv_base(ws, conv), "conversation/a.md", "x").status_code == 201
    # Then every other kind of change is refused too, and refused changes leave nothing behind
    fork = api.post(f"/workspaces/{ws}/conversations/{conv}/fork", ada)
    assert code(fork) == (429, "rate_limited")
    assert fork.headers["Retry-After"]
    assert code(api.post(f"/workspaces/{ws}/conversations", ada, {})) == (429, "rate_limited")
    assert code(api.post(f"/workspaces/{ws}/conversations/{conv}/executions", ada, {})) == (429, "rate_limited")
    assert code(api.post("/workspaces", ada, {"workspace": {"name": "w"}})) == (429, "rate_limited")
    listed = api.get(f"/workspaces/{ws}/conversations/{conv}", ada)
    assert listed.status_code == 200 and listed.json()["conversation"]["context_revision"] == 1


@pytest.fixture
def account_budget(api: Api) -> Iterator[Api]:
    with metered("AGENT_MEMORY_ACCOUNT_WRITES_PER_MINUTE"):
        yield api


def test_minting_principals_does_not_mint_budget(account_budget: Api) -> None:
    api = account_budget
    # Given an account whose Humans have together spent the account's budget (creating one spends too)
    ada = api.account()
    ws = api.workspace(ada)
    bob = api.human(ada, "bob")
    api.member(ada, ws, bob)
    # When yet another Human of the account writes, then it is refused: the account's meter is shared
    assert code(api.write(bob, ws_base(ws), "workspace/b.md", "x")) == (429, "rate_limited")
    assert code(api.post("/humans", ada, {"human": {"name": "cy"}})) == (429, "rate_limited")
    # While another account is untouched
    olga = api.account("other", "olga")
    assert api.post("/workspaces", olga, {"workspace": {"name": "w"}}).status_code == 201
