"""Organization Memories: a short lease on one file holds off every other principal's change until it ends."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest
import requests

from ..support import Api, Who, code
from .orgmem import Memories, error, pair, ro, rw

pytestmark = pytest.mark.http

NOTE = "plan.md"


@pytest.fixture
def mems(api: Api) -> Memories:
    return Memories(api)


class Desk:
    """Ada's Memory with one file; the agent `holder` attached readwrite, `reader` readonly, Bob a Human."""

    def __init__(self, api: Api, mems: Memories) -> None:
        self.ada = api.account()
        self.bob = api.human(self.ada, "bob")
        self.mem = str(mems.made(self.ada, "desk", files=[{"path": NOTE, "content": "v0\n"}])["memory_id"])
        self.holder = api.agent(self.ada, "holder")
        self.reader = api.agent(self.ada, "reader")
        for agent, entry in ((self.holder, rw(self.mem)), (self.reader, ro(self.mem))):
            r = mems.attach(self.ada, agent.public_id, [entry])
            assert r.status_code == 200, r.text
        # A second version, so that a rollback has one to go back to
        first = mems.show_file(self.ada, self.mem, NOTE).json()["file"]
        r = mems.write(self.ada, self.mem, NOTE, "v1\n", pair(first))
        assert r.status_code == 201, r.text


@pytest.fixture
def d(api: Api, mems: Memories) -> Desk:
    return Desk(api, mems)


def now_pair(mems: Memories, d: Desk) -> tuple[str, int]:
    r = mems.show_file(d.ada, d.mem, NOTE)
    assert r.status_code == 200, r.text
    return pair(r.json()["file"])


def changes(mems: Memories, who: Who, d: Desk, at: tuple[str, int]) -> list[requests.Response]:
    """A write, an overwrite, an edit, a rollback and a delete of the file by `who`, with the pair `at`."""
    pid, lv = at
    return [
        mems.write(who, d.mem, NOTE, f"by {who.public_id}\n", at),
        mems.write(who, d.mem, NOTE, "overwrite\n", at, conflict_resolution="overwrite"),
        mems.verb(who, d.mem, "rollback", path=NOTE, lock_version=0, expected_public_id=pid, expected_lock_version=lv),
        mems.verb(who, d.mem, "edit", path=NOTE, old_text="v", new_text="w", expected_public_id=pid,
                  expected_lock_version=lv),
        mems.verb(who, d.mem, "delete", path=NOTE, expected_public_id=pid, expected_lock_version=lv),
    ]  # fmt: skip


def instant(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


@pytest.mark.parametrize("seconds", [0, 61, -1, 1.5, "5", None, True])
def test_a_lease_outside_1_to_60_seconds_is_refused(mems: Memories, d: Desk, seconds: Any) -> None:
    r = mems.lease(d.holder, d.mem, NOTE, seconds)
    assert code(r) == (400, "parameter_invalid"), r.text
    # No lease was taken: Bob writes the file at once
    w = mems.write(d.bob, d.mem, NOTE, "bob\n", now_pair(mems, d))
    assert w.status_code == 201, w.text


def test_a_lease_holds_off_other_writers_but_not_its_holder(mems: Memories, d: Desk) -> None:
    before_call = time.time()
    r = mems.lease(d.holder, d.mem, NOTE, 30)
    assert r.status_code == 200, r.text
    lease = r.json()["lease"]
    assert lease["path"] == NOTE
    assert lease["holder"] == {"kind": "agent", "public_id": d.holder.public_id, "name": "holder"}
    assert before_call + 29 <= instant(lease["expires_at"]) <= time.time() + 31

    # Bob (a Human who writes the Memory) and Ada are held off every change of that file
    at = now_pair(mems, d)
    for who in (d.bob, d.ada):
        for refused in changes(mems, who, d, at):
            assert code(refused) == (409, "memory_leased"), refused.text
            err = error(refused)
            assert err["details"]["holder"]["public_id"] == d.holder.public_id
            assert err["details"]["holder"]["kind"] == "agent"
            assert err["details"]["expires_at"] == lease["expires_at"]
    assert now_pair(mems, d) == at
    assert mems.content(d.ada, d.mem, NOTE) == "v1\n"
    # ...nor may they take the lease themselves
    taken = mems.lease(d.bob, d.mem, NOTE, 5)
    assert code(taken) == (409, "memory_leased"), taken.text
    assert error(taken)["details"]["holder"]["public_id"] == d.holder.public_id

    # Other files of the Memory are not leased
    assert mems.write(d.bob, d.mem, "other.md", "bob\n").status_code == 201

    # The holder's own write lands, under the condition pair as always
    w = mems.write(d.holder, d.mem, NOTE, "v1 by holder\n", at)
    assert w.status_code == 201, w.text
    assert mems.content(d.ada, d.mem, NOTE) == "v1 by holder\n"
    # ...and its renewal extends its own lease
    again = mems.lease(d.holder, d.mem, NOTE, 60)
    assert again.status_code == 200, again.text
    assert instant(again.json()["lease"]["expires_at"]) > instant(lease["expires_at"])


def test_a_human_may_lease_and_an_agent_is_held_off(mems: Memories, d: Desk) -> None:
    r = mems.lease(d.bob, d.mem, NOTE, 20)
    assert r.status_code == 200, r.text
    assert r.json()["lease"]["holder"]["public_id"] == d.bob.public_id
    at = now_pair(mems, d)
    refused = mems.write(d.holder, d.mem, NOTE, "holder\n", at)
    assert code(refused) == (409, "memory_leased"), refused.text
    assert error(refused)["details"]["holder"] == {"kind": "human", "public_id": d.bob.public_id, "name": "bob"}
    assert now_pair(mems, d) == at
    assert mems.write(d.bob, d.mem, NOTE, "bob\n", at).status_code == 201


def test_a_lease_expires_on_its_own(mems: Memories, d: Desk) -> None:
    r = mems.lease(d.holder, d.mem, NOTE, 1)
    assert r.status_code == 200, r.text
    at = now_pair(mems, d)
    assert code(mems.write(d.bob, d.mem, NOTE, "too soon\n", at)) == (409, "memory_leased")
    until = instant(r.json()["lease"]["expires_at"])

    time.sleep(max(0.0, until - time.time()) + 0.2)

    w = mems.write(d.bob, d.mem, NOTE, "after the lease\n", at)
    assert w.status_code == 201, w.text
    assert mems.content(d.ada, d.mem, NOTE) == "after the lease\n"
    # and another principal may take the lease now
    assert mems.lease(d.bob, d.mem, NOTE, 5).status_code == 200


def test_a_read_only_agent_cannot_lease(mems: Memories, d: Desk) -> None:
    r = mems.lease(d.reader, d.mem, NOTE, 30)
    assert code(r) == (403, "memory_read_only"), r.text
    # Nothing is held: Bob writes at once
    assert mems.write(d.bob, d.mem, NOTE, "bob\n", now_pair(mems, d)).status_code == 201


def test_a_viewer_cannot_lease(api: Api, mems: Memories, d: Desk) -> None:
    team = api.workspace(d.ada, "team")
    erin = api.human(d.ada, "erin")
    api.member(d.ada, team, erin, "viewer")
    assert mems.patch(d.ada, d.mem, access={"humans": [], "workspaces": [team]}).status_code == 200
    r = mems.lease(erin, d.mem, NOTE, 30)
    assert code(r) == (403, "not_authorized"), r.text
    assert mems.write(d.ada, d.mem, NOTE, "ada\n", now_pair(mems, d)).status_code == 201


def test_the_condition_pair_still_guards_the_holders_write(mems: Memories, d: Desk) -> None:
    stale = now_pair(mems, d)
    assert mems.write(d.ada, d.mem, NOTE, "v1 by ada\n", stale).status_code == 201
    fresh = now_pair(mems, d)
    assert mems.lease(d.holder, d.mem, NOTE, 30).status_code == 200

    for refused in changes(mems, d.holder, d, stale):
        assert code(refused) == (409, "stale_object"), refused.text
    assert now_pair(mems, d) == fresh
    assert mems.content(d.ada, d.mem, NOTE) == "v1 by ada\n"
    # A create of a path that exists, with no pair, is stale too
    assert code(mems.write(d.holder, d.mem, NOTE, "blind\n")) == (409, "stale_object")
    assert mems.write(d.holder, d.mem, NOTE, "v2 by holder\n", fresh).status_code == 201
