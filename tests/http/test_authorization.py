"""Closed authorization gaps: speaker bindings, human credentials, expiring executions, aliases that
archive meanwhile, bindings racing an archive, and 401 before anything else."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from agent_memory.core.settings import settings
from agent_memory.edges.services import reset_services
from agent_memory.store import aws_clients

from ..support import CONV, SPEAKER, Api, Who, alias, bindings, code, conv_base, created, pair
from .runs import Run, make_run


@pytest.fixture
def run(api: Api) -> Run:
    return make_run(api)


def _sabotage_client() -> Any:
    """A client of its own, so what a test does to storage mid-request never meets the service's hooks."""
    return boto3.client("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")


@contextmanager
def before(operation: str, act: Callable[[], None]) -> Iterator[None]:
    """Run `act` once, just before the service sends its next `operation` request (a race, staged)."""
    ddb, _ = aws_clients()
    done: list[bool] = []

    def hook(**_: Any) -> None:
        if not done:
            done.append(True)
            act()

    ddb.meta.events.register(f"before-call.dynamodb.{operation}", hook, unique_id="test-authz-race")
    try:
        yield
    finally:
        ddb.meta.events.unregister(f"before-call.dynamodb.{operation}", unique_id="test-authz-race")


def archive_directly(conv: str) -> None:
    _sabotage_client().update_item(
        TableName=os.environ["TABLE_NAME"],
        Key={"pk": {"S": f"CONV#{conv}"}, "sk": {"S": "CONV"}},
        UpdateExpression="SET archived = :t",
        ExpressionAttributeValues={":t": {"BOOL": True}},
    )


# ---- speaker bindings ---------------------------------------------------------------------------------


def test_only_the_answering_agent_or_its_steward_binds_a_speakers_notes(run: Run) -> None:
    # Given Bob, a member who neither is nor stewards the answering agent
    value = bindings(CONV, {**SPEAKER, "speaker_public_id": run.visitor})
    before_ = run.api.show_conversation(run.ada, run.ws, run.conv)
    # When he binds the agent's speaker/ root to the visitor, then he is refused and nothing changes
    assert code(run.configure(value, who=run.bob)) == (403, "not_authorized")
    assert run.api.show_conversation(run.ada, run.ws, run.conv) == before_
    conv = run.api.post(
        f"/workspaces/{run.ws}/conversations",
        run.bob,
        {"conversation": {"answering_agent_public_id": run.alpha.public_id, "memory_context": value}},
    )
    assert code(conv) == (403, "not_authorized")
    # While the steward and the agent itself may
    assert run.configure(value).status_code == 200
    assert run.configure(value, who=run.alpha).status_code == 200


# ---- human credentials ----------------------------------------------------------------------------------


def rotate(api: Api, who: Who, human: str) -> Any:
    return api.post(f"/humans/{human}/credentials/rotate", who)


def test_a_human_rotates_its_own_token_and_the_old_one_dies_at_once(api: Api) -> None:
    ada = api.account()
    bob = api.human(ada, "bob")
    # When Bob, created by Ada, rotates his own token
    r = rotate(api, bob, bob.public_id)
    # Then he gets a new one, and the token Ada saw at creation no longer works
    assert r.status_code == 201, r.text
    assert set(r.json()) == {"human", "token"} and r.json()["human"]["public_id"] == bob.public_id
    new = Who(r.json()["token"], bob.public_id)
    assert code(api.post("/workspaces", bob, {"workspace": {"name": "w"}})) == (401, "not_authenticated")
    assert api.post("/workspaces", new, {"workspace": {"name": "w"}}).status_code == 201


def test_the_first_human_rotates_and_revokes_for_others_and_nobody_else_does(api: Api) -> None:
    ada = api.account()
    bob, cy = api.human(ada, "bob"), api.human(ada, "cy")
    bot = api.agent(ada)
    olga = api.account("other", "olga")
    # Nobody but the Human itself and the account's first Human touches its credentials
    assert code(rotate(api, cy, bob.public_id)) == (403, "not_authorized")
    assert code(api.post(f"/humans/{bob.public_id}/credentials/revoke", cy)) == (403, "not_authorized")
    assert code(rotate(api, bot, bob.public_id)) == (403, "not_authorized")
    assert code(rotate(api, olga, bob.public_id)) == (404, "not_found")
    assert api.post("/workspaces", bob, {"workspace": {"name": "w"}}).status_code == 201
    # When Ada revokes Bob's credentials, then no token of his works
    assert api.post(f"/humans/{bob.public_id}/credentials/revoke", ada).status_code == 204
    assert code(api.post("/workspaces", bob, {"workspace": {"name": "w"}})) == (401, "not_authenticated")
    # Until Ada rotates them for him
    r = rotate(api, ada, bob.public_id)
    assert r.status_code == 201, r.text
    assert api.post("/workspaces", Who(r.json()["token"], bob.public_id), {"workspace": {"name": "w"}}).status_code == (
        201
    )


def test_racing_rotations_have_one_winner_and_the_losers_mint_nothing(api: Api) -> None:
    ada = api.account()
    bob = api.human(ada, "bob")
    # When eight rotations of Bob's token race
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: rotate(api, bob, bob.public_id), range(8)))
    # Then exactly one wins; the others are stale (or, arriving after the winner committed, find the old
    # token already dead), and none of them minted a token
    won = [r for r in answers if r.status_code == 201]
    assert len(won) == 1, [r.text for r in answers]
    losers = [code(r) for r in answers if r.status_code != 201]
    assert set(losers) <= {(409, "stale_object"), (401, "not_authenticated")}, losers
    assert all("token" not in r.json() for r in answers if r.status_code != 201)
    winner = Who(won[0].json()["token"], bob.public_id)
    assert api.post("/workspaces", winner, {"workspace": {"name": "w"}}).status_code == 201


# ---- executions expire ------------------------------------------------------------------------------------


@pytest.fixture
def short_lived(api: Api) -> Iterator[Api]:
    os.environ["AGENT_MEMORY_EXECUTION_TTL_SECONDS"] = "2"
    settings.cache_clear()
    reset_services()
    yield api
    os.environ.pop("AGENT_MEMORY_EXECUTION_TTL_SECONDS")
    settings.cache_clear()
    reset_services()


def test_an_expired_executions_tools_refuse(short_lived: Api) -> None:
    run = make_run(short_lived)
    ex = run.execution()
    assert run.tool(ex, "memory_ls")["is_error"] is False
    # When its lifetime has passed
    time.sleep(3.1)
    # Then its tools answer 409 execution_expired, over HTTP and to the in-account function, and it spawns nothing
    assert code(run.call(ex, "memory_ls")) == (409, "execution_expired")
    from .test_tools import lambda_handler

    out = lambda_handler()(
        {"execution": ex["public_id"], "tool": "memory_ls", "input": {}, "secret": ex["secret"]}, None
    )
    assert out["error"]["code"] == "execution_expired"
    assert code(run.start(parent_execution_public_id=ex["public_id"])) == (409, "execution_expired")


# ---- aliases and archives that land between the read and the commit ---------------------------------------


def test_a_write_through_an_alias_bumps_the_aliased_conversation_and_fails_if_it_was_archived(run: Run) -> None:
    other = run.api.conversation(run.ada, run.ws)
    assert run.configure(bindings(CONV, alias(other, "read_write"))).status_code == 200
    other_revision = run.api.show_conversation(run.ada, run.ws, other)["context_revision"]
    # When a document is written through the alias, then the aliased conversation's next reply changes too
    first = created(run.api.write(run.ada, run.base, "group/a.md", "x"))
    assert run.api.show_conversation(run.ada, run.ws, other)["context_revision"] == other_revision + 1
    # When the aliased conversation is archived after the request read it but before it commits
    with before("TransactWriteItems", lambda: archive_directly(other)):
        r = run.api.write(run.ada, run.base, "group/a.md", "y", first)
    # Then the commit is refused and nothing changed
    assert code(r) == (409, "conversation_archived")
    assert pair(run.api.show(run.ada, run.base, "group/a.md")) == first


def test_replacing_bindings_loses_to_an_archive_that_lands_first(run: Run) -> None:
    revision = run.revision()
    with before("UpdateItem", lambda: archive_directly(run.conv)):
        r = run.configure(bindings(CONV))
    assert code(r) == (409, "conversation_archived")
    shown = run.api.show_conversation(run.ada, run.ws, run.conv)
    assert (shown["context_revision"], shown["memory_context"]) == (revision, None)


# ---- 401 before anything else -----------------------------------------------------------------------------


def test_without_a_valid_token_a_malformed_body_is_401_not_400(run: Run) -> None:
    url = f"{run.api.url}/agent_api/v1{conv_base(run.ws, run.conv)}"
    forged = "am_h_" + run.ada.public_id.replace("-", "") + "_" + "x" * 43
    for headers in ({}, {"Authorization": "Bearer nonsense"}, {"Authorization": f"Bearer {forged}"}):
        for body in (b"{not json", b"[]", b'{"memory": 5}'):
            r = run.api.http.post(url, data=body, headers={**headers, "content-type": "application/json"}, timeout=30)
            assert code(r) == (401, "not_authenticated"), (headers, body, r.text)
    # With a valid token the same body is the 400 it always was
    ok = {"Authorization": f"Bearer {run.ada.token}", "content-type": "application/json"}
    assert code(run.api.http.post(url, data=b"{not json", headers=ok, timeout=30)) == (400, "parameter_invalid")
