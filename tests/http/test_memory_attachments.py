"""Organization Memories reaching agents: attachments, tenant defaults, archive and deletion, and races."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from ..support import Api, Who, code
from .orgmem import Memories, pair, ro, rw
from .test_races import client, outcomes, race

pytestmark = pytest.mark.http

NOTE = "notes.md"


@pytest.fixture
def mems(api: Api) -> Memories:
    return Memories(api)


def made(mems: Memories, who: Who, name: str, **fields: Any) -> str:
    return str(mems.made(who, name, files=[{"path": NOTE, "content": f"{name}\n"}], **fields)["memory_id"])


def ok(r: requests.Response) -> dict[str, Any]:
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()["agent"]
    return out


def effective_ids(mems: Memories, who: Who, agent: str) -> dict[str, tuple[str, bool, str]]:
    """memory_id -> (mode, read_first, via) of the agent's effective list."""
    return {e["memory_id"]: (e["mode"], e["read_first"], e["via"]) for e in mems.effective(who, agent)}


def referrers(mems: Memories, who: Who, mem: str) -> dict[str, tuple[str, str, bool]]:
    """agent_public_id -> (via, mode, read_first) of a Memory's referenced_by."""
    rows = mems.detail(who, mem)["referenced_by"]
    out = {r["agent_public_id"]: (r["via"], r["mode"], r["read_first"]) for r in rows}
    assert len(out) == len(rows), rows  # no agent twice
    return out


def file_pair(mems: Memories, who: Who, mem: str) -> tuple[str, int]:
    r = mems.show_file(who, mem, NOTE)
    assert r.status_code == 200, r.text
    return pair(r.json()["file"])


class World:
    def __init__(self, api: Api, mems: Memories) -> None:
        self.ada = api.account()
        self.a = made(mems, self.ada, "alpha")
        self.b = made(mems, self.ada, "beta")
        self.c = made(mems, self.ada, "gamma")
        self.helper = api.agent(self.ada, "helper")
        self.other = api.agent(self.ada, "other")


@pytest.fixture
def w(api: Api, mems: Memories) -> World:
    return World(api, mems)


# ---- attachments ----------------------------------------------------------------------------------------


def test_a_patch_replaces_the_list_whole_with_read_first_defaults(mems: Memories, w: World) -> None:
    agent = w.helper.public_id
    got = ok(mems.attach(w.ada, agent, [rw(w.a), ro(w.b)]))
    expected = [
        {"memory_id": w.a, "mode": "readwrite", "read_first": True},
        {"memory_id": w.b, "mode": "readonly", "read_first": False},
    ]
    assert got["memories"] == expected
    assert mems.attached(w.ada, agent) == expected
    assert effective_ids(mems, w.ada, agent) == {
        w.a: ("readwrite", True, "attachment"),
        w.b: ("readonly", False, "attachment"),
    }
    assert referrers(mems, w.ada, w.a) == {agent: ("attachment", "readwrite", True)}

    # A second PATCH replaces the list: alpha goes, beta changes mode, gamma comes with an explicit read_first
    got = ok(mems.attach(w.ada, agent, [ro(w.c, read_first=True), rw(w.b, read_first=False)]))
    expected = [
        {"memory_id": w.c, "mode": "readonly", "read_first": True},
        {"memory_id": w.b, "mode": "readwrite", "read_first": False},
    ]
    assert got["memories"] == expected and mems.attached(w.ada, agent) == expected
    assert referrers(mems, w.ada, w.a) == {}
    assert referrers(mems, w.ada, w.b) == {agent: ("attachment", "readwrite", False)}
    counts = {m["memory_id"]: m["attachment_count"] for m in mems.listing(w.ada).json()["memories"]}
    assert counts == {w.a: 0, w.b: 1, w.c: 1}

    # The agent now reaches beta read-write, gamma read-only, and alpha not at all
    assert mems.write(w.helper, w.b, NOTE, "beta by helper\n", file_pair(mems, w.ada, w.b)).status_code == 201
    assert code(mems.write(w.helper, w.c, NOTE, "x", file_pair(mems, w.ada, w.c))) == (403, "memory_read_only")
    assert code(mems.show(w.helper, w.a)) == (404, "not_found")


def test_omitted_memories_are_preserved_in_all_three_forms(mems: Memories, w: World) -> None:
    agent = w.helper.public_id
    # A list sent: the list is replaced
    ok(mems.attach(w.ada, agent, [rw(w.a), ro(w.b)]))
    before = mems.attached(w.ada, agent)
    assert [m["memory_id"] for m in before] == [w.a, w.b]

    # Only another field sent: the list is untouched
    got = ok(mems.patch_agent(w.ada, agent, deployment="prod"))
    assert got["deployment"] == "prod" and got["memories"] == before
    assert mems.attached(w.ada, agent) == before
    got = ok(mems.patch_agent(w.ada, agent, deployment=None))
    assert got["deployment"] is None and got["memories"] == before
    assert referrers(mems, w.ada, w.a) == {agent: ("attachment", "readwrite", True)}

    # An empty list sent: everything is detached
    got = ok(mems.attach(w.ada, agent, []))
    assert got["memories"] == [] and mems.attached(w.ada, agent) == []
    assert mems.effective(w.ada, agent) == []
    assert referrers(mems, w.ada, w.a) == {} and referrers(mems, w.ada, w.b) == {}
    assert code(mems.show(w.helper, w.a)) == (404, "not_found")


def test_the_agent_itself_may_set_its_memories_within_what_it_reaches(mems: Memories, w: World) -> None:
    # Given the steward attached alpha read-write and beta read-only (issue 26: an agent grants itself nothing)
    ok(mems.attach(w.ada, w.helper.public_id, [rw(w.a), ro(w.b)]))
    # Then the agent itself may narrow and drop what it has
    got = ok(mems.attach(w.helper, w.helper.public_id, [ro(w.a)]))
    assert got["memories"] == [{"memory_id": w.a, "mode": "readonly", "read_first": False}]
    assert mems.agent(w.helper, w.helper.public_id)["memories"] == got["memories"]
    assert [e["memory_id"] for e in mems.effective(w.helper, w.helper.public_id)] == [w.a]


def _unknown(w: World, mems: Memories, api: Api) -> list[dict[str, Any]]:
    return [rw("mem_" + "0" * 32)]


def _malformed(w: World, mems: Memories, api: Api) -> list[dict[str, Any]]:
    return [rw("mem_NOTHEX")]


def _not_a_memory_id(w: World, mems: Memories, api: Api) -> list[dict[str, Any]]:
    return [{"memory_id": 42, "mode": "readonly"}]


def _archived(w: World, mems: Memories, api: Api) -> list[dict[str, Any]]:
    assert mems.archive(w.ada, w.c).status_code == 200
    return [ro(w.b), ro(w.c)]


def _bad_mode(w: World, mems: Memories, api: Api) -> list[dict[str, Any]]:
    return [{"memory_id": w.b, "mode": "write"}]


def _no_mode(w: World, mems: Memories, api: Api) -> list[dict[str, Any]]:
    return [{"memory_id": w.b}]


def _bad_read_first(w: World, mems: Memories, api: Api) -> list[dict[str, Any]]:
    return [ro(w.b, read_first="yes")]


def _twice(w: World, mems: Memories, api: Api) -> list[dict[str, Any]]:
    return [ro(w.b), rw(w.b)]


def _not_a_list(w: World, mems: Memories, api: Api) -> Any:
    return {"memory_id": w.b, "mode": "readonly"}


@pytest.mark.parametrize(
    "bad",
    [_unknown, _malformed, _not_a_memory_id, _archived, _bad_mode, _no_mode, _bad_read_first, _twice, _not_a_list],
    ids=lambda f: f.__name__.strip("_"),
)
def test_a_bad_attachment_list_is_refused_and_changes_nothing(api: Api, mems: Memories, w: World, bad: Any) -> None:
    agent = w.helper.public_id
    ok(mems.attach(w.ada, agent, [rw(w.a)]))
    before = mems.attached(w.ada, agent)
    body = bad(w, mems, api)

    r = mems.attach(w.ada, agent, body)
    assert code(r) == (422, "validation_failed"), r.text

    assert mems.attached(w.ada, agent) == before
    assert effective_ids(mems, w.ada, agent) == {w.a: ("readwrite", True, "attachment")}
    assert referrers(mems, w.ada, w.b) == {} and referrers(mems, w.ada, w.c) == {}
    assert referrers(mems, w.ada, w.a) == {agent: ("attachment", "readwrite", True)}


class Stewards:
    """Bob stewards an agent; Carol's Memory is restricted to herself; a team Memory lets Bob only view."""

    def __init__(self, api: Api, mems: Memories) -> None:
        self.ada = api.account()
        self.bob = api.human(self.ada, "bob")
        self.carol = api.human(self.ada, "carol")
        self.agent = api.agent(self.bob, "bobs-helper")
        self.secret = made(mems, self.carol, "secret", access={"humans": [], "workspaces": []})
        team = api.workspace(self.ada, "team")
        api.member(self.ada, team, self.bob, "viewer")
        self.viewed = made(mems, self.ada, "viewed", access={"humans": [], "workspaces": [team]})
        self.open = made(mems, self.ada, "open")
        ok(mems.attach(self.bob, self.agent.public_id, [ro(self.open)]))


@pytest.fixture
def s(api: Api, mems: Memories) -> Stewards:
    return Stewards(api, mems)


def _unchanged(mems: Memories, s: Stewards) -> None:
    assert mems.attached(s.ada, s.agent.public_id) == [{"memory_id": s.open, "mode": "readonly", "read_first": False}]
    assert referrers(mems, s.ada, s.secret) == {} and referrers(mems, s.ada, s.viewed) == {}


def test_a_memory_the_steward_cannot_see_is_refused_as_unknown(mems: Memories, s: Stewards) -> None:
    r = mems.attach(s.bob, s.agent.public_id, [ro(s.open), ro(s.secret)])
    assert code(r) == (422, "validation_failed"), r.text
    assert "secret" not in r.json()["error"]["message"]  # the refusal does not tell what it is
    _unchanged(mems, s)
    # ...and a program setting its own list attaches only what it already reaches (issue 26)
    r = mems.attach(s.agent, s.agent.public_id, [ro(s.secret)])
    assert code(r) == (422, "validation_failed"), r.text
    _unchanged(mems, s)


def test_read_write_needs_the_stewards_write_access(mems: Memories, s: Stewards) -> None:
    r = mems.attach(s.bob, s.agent.public_id, [ro(s.open), rw(s.viewed)])
    assert code(r) == (403, "not_authorized"), r.text
    _unchanged(mems, s)
    # The program itself grants itself nothing (issue 26): 422, as for a Memory it does not reach
    r = mems.attach(s.agent, s.agent.public_id, [rw(s.viewed)])
    assert code(r) == (422, "validation_failed"), r.text
    _unchanged(mems, s)
    # Reading is what Bob has, so a readonly attachment is his to make
    got = ok(mems.attach(s.bob, s.agent.public_id, [ro(s.viewed)]))
    assert got["memories"] == [{"memory_id": s.viewed, "mode": "readonly", "read_first": False}]
    assert mems.content(s.agent, s.viewed, NOTE) == "viewed\n"


def test_only_the_steward_or_the_program_itself_sets_the_list(api: Api, mems: Memories, s: Stewards) -> None:
    # Ada (the first Human) and Carol are not the agent's steward
    for who in (s.ada, s.carol):
        r = mems.attach(who, s.agent.public_id, [])
        assert code(r) == (403, "not_authorized"), r.text
        r = mems.patch_agent(who, s.agent.public_id, deployment="prod")
        assert code(r) == (403, "not_authorized"), r.text
    # Another agent of the account does not even see it
    stranger = api.agent(s.ada, "stranger")
    r = mems.attach(stranger, s.agent.public_id, [])
    assert code(r) == (404, "not_found"), r.text
    # An agent of another account neither
    eve = api.account("globex", "eve")
    assert code(mems.attach(eve, s.agent.public_id, [])) == (404, "not_found")
    _unchanged(mems, s)
    assert mems.agent(s.ada, s.agent.public_id)["deployment"] is None


# A readwrite attachment of a git-synced Memory acts read-only: tests/http/test_memory_git.py.


def test_a_bad_deployment_label_is_refused(mems: Memories, w: World) -> None:
    for bad in ("Prod", "has space", "-lead", 7):
        r = mems.patch_agent(w.ada, w.helper.public_id, deployment=bad)
        assert code(r) == (422, "validation_failed"), r.text
    assert mems.agent(w.ada, w.helper.public_id)["deployment"] is None


# ---- tenant defaults ------------------------------------------------------------------------------------


def test_an_account_default_reaches_every_agent(api: Api, mems: Memories, w: World) -> None:
    house = made(mems, w.ada, "house", default={"reach": "account", "mode": "readonly"})
    assert mems.detail(w.ada, house)["default"] == {
        "reach": "account",
        "deployment": None,
        "mode": "readonly",
        "read_first": False,
    }
    late = api.agent(w.ada, "late")  # an agent made after the default reaches it too
    for agent in (w.helper, w.other, late):
        assert effective_ids(mems, w.ada, agent.public_id) == {house: ("readonly", False, "default")}
        assert mems.content(agent, house, NOTE) == "house\n"
        assert mems.attached(w.ada, agent.public_id) == []
    before = file_pair(mems, w.ada, house)
    assert code(mems.write(w.helper, house, NOTE, "x", before)) == (403, "memory_read_only")
    assert file_pair(mems, w.ada, house) == before
    assert referrers(mems, w.ada, house) == {
        a.public_id: ("default", "readonly", False) for a in (w.helper, w.other, late)
    }


def test_a_deployment_default_reaches_only_that_deployments_agents(mems: Memories, w: World) -> None:
    prod = made(mems, w.ada, "prod-notes")
    r = mems.patch(w.ada, prod, default={"reach": "deployment", "deployment": "prod", "mode": "readwrite"})
    assert r.status_code == 200, r.text
    assert r.json()["memory"]["default"]["read_first"] is True
    ok(mems.patch_agent(w.ada, w.helper.public_id, deployment="prod"))
    ok(mems.patch_agent(w.ada, w.other.public_id, deployment="staging"))

    assert effective_ids(mems, w.ada, w.helper.public_id) == {prod: ("readwrite", True, "default")}
    assert mems.effective(w.ada, w.other.public_id) == []
    assert code(mems.show(w.other, prod)) == (404, "not_found")
    w1 = mems.write(w.helper, prod, NOTE, "by helper\n", file_pair(mems, w.ada, prod))
    assert w1.status_code == 201, w1.text
    assert referrers(mems, w.ada, prod) == {w.helper.public_id: ("default", "readwrite", True)}

    # Moving the agents moves the reach
    ok(mems.patch_agent(w.ada, w.helper.public_id, deployment="staging"))
    ok(mems.patch_agent(w.ada, w.other.public_id, deployment="prod"))
    assert mems.effective(w.ada, w.helper.public_id) == []
    assert code(mems.show(w.helper, prod)) == (404, "not_found")
    assert [e["memory_id"] for e in mems.effective(w.ada, w.other.public_id)] == [prod]
    assert referrers(mems, w.ada, prod) == {w.other.public_id: ("default", "readwrite", True)}


def test_an_attachment_overrides_a_default_for_its_agent(mems: Memories, w: World) -> None:
    house = made(mems, w.ada, "house", default={"reach": "account", "mode": "readonly"})
    ok(mems.attach(w.ada, w.helper.public_id, [rw(house, read_first=False)]))

    assert effective_ids(mems, w.ada, w.helper.public_id) == {house: ("readwrite", False, "attachment")}
    assert effective_ids(mems, w.ada, w.other.public_id) == {house: ("readonly", False, "default")}
    assert referrers(mems, w.ada, house) == {
        w.helper.public_id: ("attachment", "readwrite", False),
        w.other.public_id: ("default", "readonly", False),
    }
    # The attached agent writes, the other is held to the default's readonly
    assert mems.write(w.helper, house, NOTE, "by helper\n", file_pair(mems, w.ada, house)).status_code == 201
    before = file_pair(mems, w.ada, house)
    assert code(mems.write(w.other, house, NOTE, "by other\n", before)) == (403, "memory_read_only")
    assert file_pair(mems, w.ada, house) == before


def test_a_null_default_stops_reaching_agents(mems: Memories, w: World) -> None:
    house = made(mems, w.ada, "house", default={"reach": "account", "mode": "readwrite", "read_first": False})
    ok(mems.attach(w.ada, w.other.public_id, [ro(house)]))
    assert house in effective_ids(mems, w.ada, w.helper.public_id)

    r = mems.patch(w.ada, house, default=None)
    assert r.status_code == 200, r.text
    assert r.json()["memory"]["default"] is None
    assert mems.detail(w.ada, house)["default"] is None
    assert mems.effective(w.ada, w.helper.public_id) == []
    assert code(mems.show(w.helper, house)) == (404, "not_found")
    # The explicit attachment is not a default: it stays
    assert effective_ids(mems, w.ada, w.other.public_id) == {house: ("readonly", False, "attachment")}
    assert referrers(mems, w.ada, house) == {w.other.public_id: ("attachment", "readonly", False)}


@pytest.mark.parametrize(
    "bad",
    [
        {"reach": "everyone", "mode": "readonly"},
        {"reach": "deployment", "mode": "readonly"},
        {"reach": "account", "deployment": "prod", "mode": "readonly"},
        {"reach": "account", "mode": "write"},
    ],
)
def test_a_bad_default_is_refused(mems: Memories, w: World, bad: dict[str, Any]) -> None:
    r = mems.patch(w.ada, w.a, default=bad)
    assert code(r) == (422, "validation_failed"), r.text
    assert mems.detail(w.ada, w.a)["default"] is None
    assert mems.effective(w.ada, w.helper.public_id) == []


# ---- archive and delete ---------------------------------------------------------------------------------


def test_an_archived_memory_keeps_its_attachments_but_takes_no_new_one(mems: Memories, w: World) -> None:
    ok(mems.attach(w.ada, w.helper.public_id, [rw(w.a)]))
    r = mems.archive(w.ada, w.a)
    assert r.status_code == 200, r.text
    assert r.json()["memory"]["archived"] is True
    assert mems.detail(w.ada, w.a)["archived"] is True

    # The agent it was attached to keeps it, and may keep it in a list it sends again
    assert mems.attached(w.ada, w.helper.public_id) == [{"memory_id": w.a, "mode": "readwrite", "read_first": True}]
    assert [(e["memory_id"], e["archived"]) for e in mems.effective(w.ada, w.helper.public_id)] == [(w.a, True)]
    ok(mems.attach(w.ada, w.helper.public_id, [ro(w.b), rw(w.a)]))
    assert [m["memory_id"] for m in mems.attached(w.ada, w.helper.public_id)] == [w.b, w.a]

    # Another agent cannot newly attach it
    r = mems.attach(w.ada, w.other.public_id, [ro(w.a)])
    assert code(r) == (422, "validation_failed"), r.text
    assert mems.attached(w.ada, w.other.public_id) == []
    assert referrers(mems, w.ada, w.a) == {w.helper.public_id: ("attachment", "readwrite", True)}


def test_deleting_a_memory_detaches_it_everywhere_and_frees_its_name(mems: Memories, w: World) -> None:
    doomed = made(mems, w.ada, "doomed", default={"reach": "account", "mode": "readonly"})
    ok(mems.attach(w.ada, w.helper.public_id, [rw(w.a), rw(doomed)]))
    assert set(effective_ids(mems, w.ada, w.other.public_id)) == {doomed}

    r = mems.delete(w.ada, doomed)
    assert r.status_code == 204, r.text

    assert code(mems.show(w.ada, doomed)) == (404, "not_found")
    assert code(mems.files(w.ada, doomed)) == (404, "not_found")
    assert code(mems.show_file(w.ada, doomed, NOTE)) == (404, "not_found")
    assert code(mems.show_file(w.helper, doomed, NOTE)) == (404, "not_found")
    assert code(mems.write(w.ada, doomed, "new.md", "x")) == (404, "not_found")
    assert code(mems.delete(w.ada, doomed)) == (404, "not_found")
    assert doomed not in mems.listed(w.ada)
    assert mems.attached(w.ada, w.helper.public_id) == [{"memory_id": w.a, "mode": "readwrite", "read_first": True}]
    assert list(effective_ids(mems, w.ada, w.helper.public_id)) == [w.a]
    assert mems.effective(w.ada, w.other.public_id) == []

    # The name is free again, for a new and empty Memory
    again = mems.made(w.ada, "doomed")
    assert again["memory_id"] != doomed and again["file_count"] == 0 and again["default"] is None
    assert referrers(mems, w.ada, again["memory_id"]) == {}
    # And the helper can be given a list without the deleted Memory getting in the way
    ok(mems.attach(w.ada, w.helper.public_id, [rw(w.a), ro(again["memory_id"])]))


def test_deleting_a_memory_attached_to_45_agents_detaches_all_of_them(api: Api, mems: Memories) -> None:
    ada = api.account()
    doomed = made(mems, ada, "doomed")
    keep = made(mems, ada, "keep")
    agents = [api.agent(ada, f"agent-{i:02d}").public_id for i in range(45)]
    for agent in agents:
        ok(mems.attach(ada, agent, [ro(keep), rw(doomed)]))
    assert len(mems.detail(ada, doomed)["referenced_by"]) == 45

    r = mems.delete(ada, doomed)
    assert r.status_code == 204, r.text

    assert code(mems.show(ada, doomed)) == (404, "not_found")
    for agent in agents:
        assert mems.attached(ada, agent) == [{"memory_id": keep, "mode": "readonly", "read_first": False}]
    assert len(mems.detail(ada, keep)["referenced_by"]) == 45
    assert mems.listed(ada) == [keep]
    again = mems.made(ada, "doomed")
    assert mems.detail(ada, again["memory_id"])["referenced_by"] == []


def test_only_a_writer_deletes_or_archives_a_memory(api: Api, mems: Memories, w: World) -> None:
    ok(mems.attach(w.ada, w.helper.public_id, [rw(w.a)]))
    # An agent, even one attached readwrite, changes files only
    for r in (mems.delete(w.helper, w.a), mems.archive(w.helper, w.a)):
        assert code(r) == (403, "not_authorized"), r.text
    detail = mems.detail(w.ada, w.a)
    assert detail["archived"] is False and detail["file_count"] == 1
    assert mems.attached(w.ada, w.helper.public_id) == [{"memory_id": w.a, "mode": "readwrite", "read_first": True}]


# ---- races ----------------------------------------------------------------------------------------------


def test_concurrent_writes_of_one_file_with_one_pair_have_one_winner(api: Api, mems: Memories, w: World) -> None:
    ok(mems.attach(w.ada, w.helper.public_id, [rw(w.a)]))
    seen = file_pair(mems, w.ada, w.a)
    writers = [w.ada, w.helper]

    def write(i: int) -> requests.Response:
        return Memories(client(api)).write(writers[i % 2], w.a, NOTE, f"written by {i}\n", seen)

    responses = race(16, write)

    assert outcomes(responses) == {(201, None): 1, (409, "stale_object"): 15}
    (winner,) = [i for i, r in enumerate(responses) if r.status_code == 201]
    assert mems.content(w.ada, w.a, NOTE) == f"written by {winner}\n"
    assert file_pair(mems, w.ada, w.a) == (seen[0], 1)
    versions = mems.verb(w.ada, w.a, "versions", path=NOTE)
    assert versions.status_code == 200, versions.text


def test_racing_attachment_patches_leave_lists_edges_and_counts_agreeing(api: Api, mems: Memories) -> None:
    ada = api.account()
    pool = [made(mems, ada, f"pool-{i}") for i in range(8)]
    agent = api.agent(ada, "helper").public_id

    # Each thread sends its own list (its Memory, and the next one)
    def patch(i: int) -> requests.Response:
        body = [ro(pool[i]), ro(pool[(i + 1) % 8])]
        return Memories(client(api)).attach(ada, agent, body)

    responses = race(8, patch)

    got = outcomes(responses)
    assert set(got) <= {(200, None), (409, "stale_object")}, got
    assert got[(200, None)] >= 1
    winners = [r.json()["agent"]["memories"] for r in responses if r.status_code == 200]
    final = mems.attached(ada, agent)
    assert final in winners
    attached = {m["memory_id"] for m in final}
    counts = {m["memory_id"]: m["attachment_count"] for m in mems.listing(ada).json()["memories"]}
    assert counts == {m: int(m in attached) for m in pool}
    for m in pool:
        assert set(referrers(mems, ada, m)) == ({agent} if m in attached else set())


def test_more_than_16_attachments_are_refused(api: Api, mems: Memories) -> None:
    ada = api.account()
    many = [mems.made(ada, f"m-{i:02d}")["memory_id"] for i in range(17)]
    agent = api.agent(ada, "helper").public_id
    ok(mems.attach(ada, agent, [ro(m) for m in many[:16]]))
    before = mems.attached(ada, agent)
    r = mems.attach(ada, agent, [ro(m) for m in many])
    assert code(r) == (422, "validation_failed"), r.text
    assert mems.attached(ada, agent) == before
    assert referrers(mems, ada, many[16]) == {}


# ---- one spelling of the access modes -------------------------------------------------------------------


@pytest.mark.parametrize(("old", "new"), [("readWrite", "readwrite"), ("readOnly", "readonly")])
def test_the_camelcase_mode_is_refused_naming_the_one_spelling(mems: Memories, w: World, old: str, new: str) -> None:
    agent = w.helper.public_id
    ok(mems.attach(w.ada, agent, [rw(w.a)]))
    before = mems.attached(w.ada, agent)
    # When an attachment or a default names its mode in camelCase, as attachments once took it
    attached = mems.attach(w.ada, agent, [{"memory_id": w.b, "mode": old}])
    defaulted = mems.patch(w.ada, w.b, default={"reach": "account", "mode": old})
    # Then each is refused as a bad parameter whose sentence names the lowercase spelling mounts use too
    for r, where in ((attached, "agent.memories[0].mode"), (defaulted, "memory.default.mode")):
        assert code(r) == (400, "parameter_invalid"), r.text
        assert f'{where} is spelled "{new}", not "{old}"' in r.json()["error"]["message"], r.text
    # And nothing changed
    assert mems.attached(w.ada, agent) == before
    assert mems.detail(w.ada, w.b)["default"] is None
