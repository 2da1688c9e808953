"""The directory routes over HTTP: accounts, humans, workspaces, members, conversations, and who gets in."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from ..support import Api, Who, code, conv_base, pair, ws_base
from .world import make_world, scan_table

UUID_LEN = 36


def _new_account(api: Api, key: str | None, body: Any = None) -> Any:
    headers = {"X-Operator-Key": key} if key is not None else {}
    body = body if body is not None else {"account": {"name": "acme"}, "human": {"name": "ada"}}
    return api.post("/accounts", json=body, headers=headers)


# ---- accounts ---------------------------------------------------------------------------------------


def test_operator_creates_an_account_with_its_first_human_and_token(api: Api) -> None:
    # Given the deployment's operator key
    # When the operator creates an account
    r = _new_account(api, api.operator_key)
    # Then the account, its first Human and a bearer token come back
    assert r.status_code == 201, r.text
    body = r.json()
    assert set(body) == {"account", "human", "token"}
    assert body["account"]["name"] == "acme" and len(body["account"]["public_id"]) == UUID_LEN
    assert body["human"]["name"] == "ada" and len(body["human"]["public_id"]) == UUID_LEN
    assert isinstance(body["token"], str) and body["token"]
    # And the token works at once
    ws = api.post("/workspaces", body["token"], {"workspace": {"name": "room"}})
    assert ws.status_code == 201, ws.text


@pytest.mark.parametrize("key", [None, "", "wrong-key", "x" * 200], ids=["absent", "empty", "wrong", "long"])
def test_an_account_needs_the_operator_key(api: Api, key: str | None) -> None:
    # Given no operator key, or the wrong one
    # When someone tries to create an account
    r = _new_account(api, key)
    # Then they are not authenticated, and no account exists
    assert code(r) == (401, "not_authenticated")
    assert r.json()["error"]["message"]
    assert not [i for i in scan_table() if i["sk"] == "ACCOUNT"]


def test_a_human_token_is_not_an_operator_key(api: Api) -> None:
    # Given a Human with a valid bearer token
    ada = api.account()
    # When the Human tries to create another account with it
    r = api.post(
        "/accounts", ada, {"account": {"name": "x"}, "human": {"name": "y"}}, headers={"X-Operator-Key": ada.token}
    )
    # Then only the operator key would have worked
    assert code(r) == (401, "not_authenticated")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"human": {"name": "ada"}}, "parameter_missing"),
        ({"account": {"name": "acme"}}, "parameter_missing"),
        ({"account": "acme", "human": {"name": "ada"}}, "parameter_invalid"),
        ({"account": {}, "human": {"name": "ada"}}, "parameter_missing"),
        ({"account": {"name": ""}, "human": {"name": "ada"}}, "parameter_invalid"),
        ({"account": {"name": "acme"}, "human": {"name": 7}}, "parameter_invalid"),
    ],
    ids=["no-account", "no-human", "account-not-object", "no-name", "blank-name", "name-not-string"],
)
def test_account_body_shapes_are_checked(api: Api, body: dict[str, Any], expected: str) -> None:
    # Given the operator key and a malformed body
    # When the operator posts it
    r = _new_account(api, api.operator_key, body)
    # Then the body is refused with the seed's code
    assert code(r) == (400, expected)


def test_a_body_that_is_not_a_json_object_is_refused(api: Api) -> None:
    # Given the operator key and a body that is not JSON, then a JSON array
    headers = {"X-Operator-Key": api.operator_key, "Content-Type": "application/json"}
    for raw in ("{not json", "[1, 2]"):
        r = api.http.post(f"{api.url}/agent_api/v1/accounts", data=raw, headers=headers, timeout=30)
        # Then each is a 400 with the error body, never a crash
        assert code(r) == (400, "parameter_invalid"), raw


# ---- humans and tokens ------------------------------------------------------------------------------


def test_a_human_adds_a_human_who_gets_a_working_token(api: Api) -> None:
    # Given an account's first Human
    ada = api.account()
    # When Ada adds Bob
    r = api.post("/humans", ada, {"human": {"name": "bob"}})
    # Then Bob exists with his own token, which authenticates him
    assert r.status_code == 201, r.text
    assert set(r.json()) == {"human", "token"}
    assert r.json()["human"]["name"] == "bob"
    bob = Who(r.json()["token"], r.json()["human"]["public_id"])
    assert bob.public_id != ada.public_id and bob.token != ada.token
    assert api.post("/workspaces", bob, {"workspace": {"name": "bob's"}}).status_code == 201


def test_add_human_checks_its_body(api: Api) -> None:
    ada = api.account()
    assert code(api.post("/humans", ada, {})) == (400, "parameter_missing")
    assert code(api.post("/humans", ada, {"human": {"name": "  "}})) == (400, "parameter_invalid")


def _forged_tokens(real: Who, other: Who) -> dict[str, str]:
    # Tokens are am_<kind>_<principal hex>_<secret>, and the secret may itself contain "_"
    head = real.token.split("_", 3)
    prefix, secret = "_".join(head[:3]), head[3]
    other_secret = other.token.split("_", 3)[3]
    return {
        "garbage": "garbage",
        "wrong-secret": f"{prefix}_{secrets.token_urlsafe(32)}",
        "other-principals-secret": f"{prefix}_{other_secret}",
        "secret-one-char-off": f"{prefix}_{secret[:-1]}{'A' if secret[-1] != 'A' else 'B'}",
        "wrong-kind": real.token.replace("am_h_", "am_a_", 1),
        "truncated": real.token[:-5],
        "uppercased": real.token.upper(),
    }


@pytest.mark.parametrize(
    "kind",
    [
        "garbage",
        "wrong-secret",
        "other-principals-secret",
        "secret-one-char-off",
        "wrong-kind",
        "truncated",
        "uppercased",
    ],
)
def test_a_forged_or_garbage_token_is_not_authenticated(api: Api, kind: str) -> None:
    # Given a real Human with a workspace, and a token built from pieces of real ones
    ada = api.account()
    bob = api.human(ada)
    ws = api.workspace(ada)
    forged = _forged_tokens(ada, bob)[kind]
    # When the forged token is used on the directory and on memory
    attempts = [
        api.post("/humans", forged, {"human": {"name": "eve"}}),
        api.post("/workspaces", forged, {"workspace": {"name": "eve"}}),
        api.get(ws_base(ws), forged),
    ]
    # Then every request is 401 not_authenticated
    for r in attempts:
        assert code(r) == (401, "not_authenticated"), r.text


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Token am_h_x"],
    ids=["absent", "empty", "scheme-only", "scheme-space", "basic", "other-scheme"],
)
def test_requests_without_a_bearer_token_are_not_authenticated(api: Api, header: str | None) -> None:
    # Given a world the caller could otherwise reach
    w = make_world(api)
    headers = {"Authorization": header} if header is not None else {}
    # When requests arrive with no usable Authorization header
    attempts = [
        api.post("/humans", json={"human": {"name": "eve"}}, headers=headers),
        api.post("/workspaces", json={"workspace": {"name": "x"}}, headers=headers),
        api.post(f"/workspaces/{w.ws}/conversations", json={"conversation": {}}, headers=headers),
        api.get(f"/workspaces/{w.ws}/conversations/{w.conv}", headers=headers),
        api.get(w.base, headers=headers),
        api.post(f"{w.base}/show", json={"memory": {"path": "conversation/a.md"}}, headers=headers),
        api.post(
            w.base,
            json={
                "memory": {
                    "path": "conversation/a.md",
                    "content": "x",
                    "expected_public_id": None,
                    "expected_lock_version": None,
                }
            },
            headers=headers,
        ),
    ]
    # Then each is 401 not_authenticated
    for r in attempts:
        assert code(r) == (401, "not_authenticated"), r.text


def test_tokens_are_stored_only_as_hashes(api: Api) -> None:
    # Given an account, a second Human and some data
    ada = api.account()
    bob = api.human(ada)
    w_ws = api.workspace(ada)
    api.write(ada, conv_base(w_ws, api.conversation(ada, w_ws)), "conversation/a.md", "hello")
    # When the whole table is read
    dump = repr(scan_table())
    # Then neither token, nor its secret part, is stored anywhere
    for who in (ada, bob):
        assert who.token not in dump
        # The secret itself may contain "_", so split on the first three separators only
        secret = who.token.split("_", 3)[3]
        assert len(secret) >= 32
        assert secret not in dump


# ---- workspaces and members ------------------------------------------------------------------------


def test_creating_a_workspace_makes_the_caller_a_member(api: Api) -> None:
    # Given a Human
    ada = api.account()
    # When she creates a workspace
    r = api.post("/workspaces", ada, {"workspace": {"name": "room"}})
    # Then it is returned, and she can write in it
    assert r.status_code == 201, r.text
    ws = r.json()["workspace"]
    assert ws["name"] == "room" and len(ws["public_id"]) == UUID_LEN
    assert api.write(ada, ws_base(ws["public_id"]), "workspace/a.md", "x").status_code == 201
    assert code(api.post("/workspaces", ada, {"workspace": {}})) == (400, "parameter_missing")


def test_a_human_who_is_not_a_member_cannot_see_the_workspace(api: Api) -> None:
    # Given Ada's workspace and conversation, and Bob in the same account but not a member
    w = make_world(api)
    bob = api.human(w.owner)
    # When Bob reaches for them
    attempts = [
        api.get(f"/workspaces/{w.ws}/conversations/{w.conv}", bob),
        api.post(f"/workspaces/{w.ws}/conversations", bob, {"conversation": {}}),
        api.post(f"/workspaces/{w.ws}/conversations/{w.conv}/archive", bob),
        api.post(f"/workspaces/{w.ws}/members", bob, {"member": {"human_public_id": bob.public_id}}),
        api.get(w.base, bob),
        api.show(bob, w.base, "conversation/a.md"),
        api.write(bob, w.base, "conversation/a.md", "x"),
        api.get(w.ws_base, bob),
        api.write(bob, w.ws_base, "workspace/a.md", "x"),
    ]
    # Then each is 404 not_found: the workspace is not visible to him
    for r in attempts:
        assert code(r) == (404, "not_found"), r.text


def test_another_accounts_workspace_is_not_found(api: Api) -> None:
    # Given Ada's world and Eve in a different account
    w = make_world(api)
    eve = api.account("other", "eve")
    # When Eve uses Ada's ids
    attempts = [
        api.get(f"/workspaces/{w.ws}/conversations/{w.conv}", eve),
        api.post(f"/workspaces/{w.ws}/conversations", eve, {"conversation": {}}),
        api.post(f"/workspaces/{w.ws}/members", eve, {"member": {"human_public_id": eve.public_id}}),
        api.get(w.base, eve),
        api.grep(eve, w.base, "x"),
        api.delete(eve, w.base, "conversation/a.md", ("01995000-0000-7000-8000-000000000001", 0)),
        api.get(w.ws_base, eve),
    ]
    # Then nothing of Ada's is visible
    for r in attempts:
        assert code(r) == (404, "not_found"), r.text


def test_adding_a_member_from_another_account_or_unknown_is_not_found(api: Api) -> None:
    # Given Ada's workspace and Eve in another account
    ada = api.account()
    ws = api.workspace(ada)
    eve = api.account("other", "eve")
    # When Ada adds Eve, or a Human that does not exist
    for human in (eve.public_id, "01995000-0000-7000-8000-000000000001"):
        r = api.post(f"/workspaces/{ws}/members", ada, {"member": {"human_public_id": human, "role": "member"}})
        # Then no such Human is visible to her
        assert code(r) == (404, "not_found"), r.text


@pytest.mark.parametrize(
    ("member", "expected"),
    [
        ({"role": "member"}, "parameter_invalid"),
        ({"human_public_id": "not-a-uuid"}, "parameter_invalid"),
        ({"human_public_id": "HUMAN", "role": "member"}, "parameter_invalid"),
        ({"role": "owner", "human_public_id": None}, "parameter_invalid"),
    ],
    ids=["no-principal", "bad-uuid", "bad-uuid-2", "no-principal-bad-role"],
)
def test_add_member_checks_its_body(api: Api, member: dict[str, Any], expected: str) -> None:
    ada = api.account()
    ws = api.workspace(ada)
    r = api.post(f"/workspaces/{ws}/members", ada, {"member": member})
    assert code(r) == (400, expected)


def test_add_member_refuses_an_unknown_role(api: Api) -> None:
    ada = api.account()
    bob = api.human(ada)
    ws = api.workspace(ada)
    r = api.post(f"/workspaces/{ws}/members", ada, {"member": {"human_public_id": bob.public_id, "role": "owner"}})
    assert code(r) == (400, "parameter_invalid")
    assert code(api.post(f"/workspaces/{ws}/members", ada, {})) == (400, "parameter_missing")


def test_a_member_reads_and_writes_memory(api: Api) -> None:
    # Given Bob added to Ada's workspace as a member
    w = make_world(api)
    bob = api.human(w.owner)
    r = api.post(
        f"/workspaces/{w.ws}/members", w.owner, {"member": {"human_public_id": bob.public_id, "role": "member"}}
    )
    assert r.status_code == 201, r.text
    assert r.json()["member"]["role"] == "member"
    # When Bob writes through the conversation and the workspace doors
    made = api.write(bob, w.base, "conversation/bob.md", "from bob")
    room = api.write(bob, w.ws_base, "workspace/bob.md", "room note")
    # Then both are accepted, and he may start conversations and archive them
    assert made.status_code == 201 and room.status_code == 201
    assert api.edit(bob, w.base, "conversation/bob.md", "bob", "Bob", pair(made)).status_code == 200
    mine = api.conversation(bob, w.ws)
    assert api.post(f"/workspaces/{w.ws}/conversations/{mine}/archive", bob).status_code == 200


def test_a_viewer_reads_memory_but_cannot_change_anything(api: Api) -> None:
    # Given a conversation with documents, and Vic added as a viewer
    w = make_world(api)
    doc = api.write(w.owner, w.base, "conversation/plan.md", "ship friday")
    room = api.write(w.owner, w.ws_base, "workspace/room.md", "shared")
    vic = api.human(w.owner, "vic")
    api.member(w.owner, w.ws, vic, role="viewer")
    before = w.snapshot()
    # When Vic reads
    assert api.get(f"/workspaces/{w.ws}/conversations/{w.conv}", vic).status_code == 200
    assert [m["path"] for m in api.ls(vic, w.base).json()["memory"]] == ["conversation/plan.md", "workspace/room.md"]
    assert api.show(vic, w.base, "conversation/plan.md").json()["memory"]["content"] == "ship friday"
    assert api.grep(vic, w.base, "ship").json()["matches"][0]["path"] == "conversation/plan.md"
    assert api.show(vic, w.ws_base, "workspace/room.md").status_code == 200
    # Then reading works, and every change is 403 not_authorized
    refusals = [
        api.write(vic, w.base, "conversation/new.md", "x"),
        api.write(vic, w.base, "conversation/plan.md", "x", pair(doc)),
        api.write(vic, w.base, "workspace/new.md", "x"),
        api.edit(vic, w.base, "conversation/plan.md", "friday", "monday", pair(doc)),
        api.delete(vic, w.base, "conversation/plan.md", pair(doc)),
        api.write(vic, w.ws_base, "workspace/new.md", "x"),
        api.edit(vic, w.ws_base, "workspace/room.md", "shared", "mine", pair(room)),
        api.delete(vic, w.ws_base, "workspace/room.md", pair(room)),
        api.post(f"/workspaces/{w.ws}/conversations", vic, {"conversation": {}}),
        api.post(f"/workspaces/{w.ws}/conversations/{w.conv}/archive", vic),
        api.post(f"/workspaces/{w.ws}/members", vic, {"member": {"human_public_id": vic.public_id}}),
    ]
    for r in refusals:
        assert code(r) == (403, "not_authorized"), r.text
    # And nothing changed
    assert w.snapshot() == before
    assert api.show_conversation(w.owner, w.ws, w.conv)["archived"] is False


def test_a_viewer_promoted_to_member_may_write(api: Api) -> None:
    # Given a viewer
    w = make_world(api)
    vic = api.human(w.owner, "vic")
    api.member(w.owner, w.ws, vic, role="viewer")
    assert code(api.write(vic, w.base, "conversation/a.md", "x")) == (403, "not_authorized")
    # When the owner adds her again as a member
    api.member(w.owner, w.ws, vic, role="member")
    # Then her standing is write
    assert api.write(vic, w.base, "conversation/a.md", "x").status_code == 201


# ---- conversations ----------------------------------------------------------------------------------


def test_create_show_and_archive_a_conversation(api: Api) -> None:
    # Given a workspace
    ada = api.account()
    ws = api.workspace(ada)
    # When a conversation is created
    r = api.post(f"/workspaces/{ws}/conversations", ada, {"conversation": {}})
    # Then its full representation comes back, with the default roots available
    assert r.status_code == 201, r.text
    conv = r.json()["conversation"]
    assert {
        "public_id",
        "workspace_public_id",
        "context_revision",
        "archived",
        "memory_context",
        "effective_memory_context",
    } <= set(conv)
    assert conv["workspace_public_id"] == ws
    assert conv["context_revision"] == 0 and conv["archived"] is False and conv["memory_context"] is None
    effective = {b["name"]: b for b in conv["effective_memory_context"]["bindings"]}
    assert {"conversation", "workspace"} <= set(effective)
    assert effective["conversation"]["anchor_public_id"] == conv["public_id"]
    assert effective["workspace"]["anchor_public_id"] == ws
    # And reading it gives the same representation
    got = api.get(f"/workspaces/{ws}/conversations/{conv['public_id']}", ada)
    assert got.status_code == 200 and got.json()["conversation"] == conv
    # When it is archived (twice)
    for _ in range(2):
        done = api.post(f"/workspaces/{ws}/conversations/{conv['public_id']}/archive", ada)
        # Then it reports archived, and archiving bumped no revision
        assert done.status_code == 200, done.text
        assert done.json()["conversation"]["archived"] is True
        assert done.json()["conversation"]["context_revision"] == 0
    assert api.show_conversation(ada, ws, conv["public_id"])["archived"] is True


def test_a_conversation_body_may_be_omitted(api: Api) -> None:
    ada = api.account()
    ws = api.workspace(ada)
    r = api.post(f"/workspaces/{ws}/conversations", ada)
    assert r.status_code == 201, r.text
    assert code(api.post(f"/workspaces/{ws}/conversations", ada, {"conversation": "x"})) == (400, "parameter_invalid")


def test_a_conversation_is_only_found_under_its_own_workspace(api: Api) -> None:
    # Given two of Ada's workspaces, a conversation in the first
    w = make_world(api)
    other_ws = api.workspace(w.owner, "other")
    # When the conversation is addressed under the other workspace, or an id that does not exist is used
    attempts = [
        api.get(f"/workspaces/{other_ws}/conversations/{w.conv}", w.owner),
        api.get(conv_base(other_ws, w.conv), w.owner),
        api.write(w.owner, conv_base(other_ws, w.conv), "conversation/a.md", "x"),
        api.post(f"/workspaces/{other_ws}/conversations/{w.conv}/archive", w.owner),
        api.get(f"/workspaces/{w.ws}/conversations/01995000-0000-7000-8000-000000000001", w.owner),
        api.get(f"/workspaces/{w.ws}/conversations/not-a-uuid", w.owner),
        api.get("/workspaces/not-a-uuid/memory", w.owner),
    ]
    # Then each is 404 not_found
    for r in attempts:
        assert code(r) == (404, "not_found"), r.text
    # And the conversation was not archived by the misaddressed call
    assert api.show_conversation(w.owner, w.ws, w.conv)["archived"] is False
