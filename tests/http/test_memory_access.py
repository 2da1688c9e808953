"""Organization Memories: who reaches one (open access, the Access panel, agents by attachment or default),
who changes its access, the listing's pages, and the agent token as the memory write credential."""

from __future__ import annotations

import pytest

from ..support import Api, Who, code
from .orgmem import Memories, pair, ro, rw

pytestmark = pytest.mark.http

NOTE = "runbook/deploy.md"


@pytest.fixture
def mems(api: Api) -> Memories:
    return Memories(api)


def with_note(mems: Memories, who: Who, name: str = "runbooks", **fields: object) -> str:
    made = mems.made(who, name, files=[{"path": NOTE, "content": "v0\n"}], **fields)
    return str(made["memory_id"])


def current(mems: Memories, who: Who, mem: str) -> tuple[str, int]:
    r = mems.show_file(who, mem, NOTE)
    assert r.status_code == 200, r.text
    return pair(r.json()["file"])


# ---- open access ----------------------------------------------------------------------------------------


def test_by_default_every_human_of_the_account_reads_and_writes(api: Api, mems: Memories) -> None:
    # Given a Memory Ada made with no Access panel
    ada = api.account()
    bob = api.human(ada, "bob")
    mem = with_note(mems, ada)
    assert mems.detail(ada, mem)["access"] is None

    # Then Bob, another Human of the account, sees it, lists it, reads and writes its files
    assert mems.detail(bob, mem)["name"] == "runbooks"
    assert mem in mems.listed(bob)
    assert mems.content(bob, mem, NOTE) == "v0\n"
    w = mems.write(bob, mem, NOTE, "v1 by bob\n", current(mems, bob, mem))
    assert w.status_code == 201, w.text
    assert w.json()["file"]["written_by"]["public_id"] == bob.public_id
    assert mems.content(ada, mem, NOTE) == "v1 by bob\n"
    # ...and may change its description (he writes it)
    assert mems.patch(bob, mem, description="bob's notes").status_code == 200


def test_another_accounts_human_finds_nothing(api: Api, mems: Memories) -> None:
    ada = api.account()
    mem = with_note(mems, ada)
    eve = api.account("globex", "eve")
    before = current(mems, ada, mem)

    # Every door of the Memory answers Eve as if it did not exist
    assert code(mems.show(eve, mem)) == (404, "not_found")
    assert code(mems.files(eve, mem)) == (404, "not_found")
    assert code(mems.show_file(eve, mem, NOTE)) == (404, "not_found")
    assert code(mems.write(eve, mem, NOTE, "eve was here", before)) == (404, "not_found")
    assert code(mems.patch(eve, mem, description="mine")) == (404, "not_found")
    assert code(mems.delete(eve, mem)) == (404, "not_found")
    assert mem not in mems.listed(eve)

    # And nothing changed
    assert current(mems, ada, mem) == before
    assert mems.content(ada, mem, NOTE) == "v0\n"
    assert mems.detail(ada, mem)["description"] == "shared notes"


# ---- the Access panel -----------------------------------------------------------------------------------


class Panel:
    """Ada's account: Bob named in the panel, a team workspace with a member and a viewer, Carol outside."""

    def __init__(self, api: Api, mems: Memories) -> None:
        self.ada = api.account()
        self.bob = api.human(self.ada, "bob")
        self.carol = api.human(self.ada, "carol")
        self.dan = api.human(self.ada, "dan")
        self.erin = api.human(self.ada, "erin")
        self.team = api.workspace(self.ada, "team")
        api.member(self.ada, self.team, self.dan, "member")
        api.member(self.ada, self.team, self.erin, "viewer")
        self.mem = with_note(mems, self.ada)
        r = mems.patch(self.ada, self.mem, access={"humans": [self.bob.public_id], "workspaces": [self.team]})
        assert r.status_code == 200, r.text
        assert r.json()["memory"]["access"] == {"humans": [self.bob.public_id], "workspaces": [self.team]}


@pytest.fixture
def panel(api: Api, mems: Memories) -> Panel:
    return Panel(api, mems)


def test_a_human_outside_the_panel_finds_nothing(mems: Memories, panel: Panel) -> None:
    carol, mem = panel.carol, panel.mem
    before = current(mems, panel.ada, mem)
    assert code(mems.show(carol, mem)) == (404, "not_found")
    assert code(mems.files(carol, mem)) == (404, "not_found")
    assert code(mems.show_file(carol, mem, NOTE)) == (404, "not_found")
    assert code(mems.write(carol, mem, NOTE, "carol", before)) == (404, "not_found")
    assert code(mems.write(carol, mem, "new.md", "carol")) == (404, "not_found")
    assert code(mems.patch(carol, mem, description="carol's")) == (404, "not_found")
    assert code(mems.archive(carol, mem)) == (404, "not_found")
    assert code(mems.delete(carol, mem)) == (404, "not_found")
    assert mem not in mems.listed(carol)
    # Nothing changed
    assert current(mems, panel.ada, mem) == before
    detail = mems.detail(panel.ada, mem)
    assert detail["file_count"] == 1 and detail["description"] == "shared notes" and detail["archived"] is False


def test_a_human_named_in_the_panel_and_a_team_member_write(mems: Memories, panel: Panel) -> None:
    mem = panel.mem
    assert mem in mems.listed(panel.bob) and mem in mems.listed(panel.dan)
    w = mems.write(panel.bob, mem, NOTE, "v1 by bob\n", current(mems, panel.bob, mem))
    assert w.status_code == 201, w.text
    w = mems.write(panel.dan, mem, NOTE, "v2 by dan\n", current(mems, panel.dan, mem))
    assert w.status_code == 201, w.text
    assert w.json()["file"]["lock_version"] == 2
    assert mems.content(panel.ada, mem, NOTE) == "v2 by dan\n"


def test_a_team_viewer_reads_but_cannot_write(mems: Memories, panel: Panel) -> None:
    erin, mem = panel.erin, panel.mem
    assert mem in mems.listed(erin)
    assert mems.detail(erin, mem)["name"] == "runbooks"
    assert mems.content(erin, mem, NOTE) == "v0\n"
    before = current(mems, erin, mem)

    for r in (
        mems.write(erin, mem, NOTE, "erin", before),
        mems.write(erin, mem, "erin.md", "erin"),
        mems.verb(
            erin,
            mem,
            "edit",
            path=NOTE,
            old_text="v0",
            new_text="x",
            expected_public_id=before[0],
            expected_lock_version=before[1],
        ),
        mems.verb(erin, mem, "delete", path=NOTE, expected_public_id=before[0], expected_lock_version=before[1]),
        mems.patch(erin, mem, description="erin's"),
        mems.archive(erin, mem),
        mems.delete(erin, mem),
    ):
        assert code(r) == (403, "not_authorized"), r.text

    assert current(mems, panel.ada, mem) == before
    assert mems.content(panel.ada, mem, NOTE) == "v0\n"
    detail = mems.detail(panel.ada, mem)
    assert detail["file_count"] == 1 and detail["description"] == "shared notes" and detail["archived"] is False


def test_null_access_opens_the_memory_again(mems: Memories, panel: Panel) -> None:
    carol, mem = panel.carol, panel.mem
    assert code(mems.show(carol, mem)) == (404, "not_found")
    r = mems.patch(panel.ada, mem, access=None)
    assert r.status_code == 200, r.text
    assert r.json()["memory"]["access"] is None
    assert mem in mems.listed(carol)
    w = mems.write(carol, mem, NOTE, "carol\n", current(mems, carol, mem))
    assert w.status_code == 201, w.text
    # The viewer now writes too: open access lets every Human of the account write
    w = mems.write(panel.erin, mem, NOTE, "erin\n", current(mems, panel.erin, mem))
    assert w.status_code == 201, w.text


def test_a_panel_naming_someone_outside_the_account_is_refused(api: Api, mems: Memories) -> None:
    ada = api.account()
    mem = with_note(mems, ada)
    eve = api.account("globex", "eve")
    elsewhere = api.workspace(eve, "theirs")
    for panel_ in ({"humans": [eve.public_id]}, {"workspaces": [elsewhere]}):
        r = mems.patch(ada, mem, access=panel_)
        assert code(r) == (422, "validation_failed"), r.text
    assert mems.detail(ada, mem)["access"] is None


def test_only_the_creator_and_the_first_human_change_access(api: Api, mems: Memories) -> None:
    # Given a Memory Bob created (Ada is the account's first Human) and Carol, who writes it
    ada = api.account()
    bob = api.human(ada, "bob")
    carol = api.human(ada, "carol")
    mem = with_note(mems, bob)
    tight = {"humans": [carol.public_id], "workspaces": []}

    # Carol writes the Memory but may not change who sees it
    assert mems.patch(carol, mem, description="carol's view").status_code == 200
    r = mems.patch(carol, mem, access=tight)
    assert code(r) == (403, "not_authorized"), r.text
    assert mems.detail(ada, mem)["access"] is None

    # Once named in the panel she still may not change it
    r = mems.patch(bob, mem, access=tight)
    assert r.status_code == 200, r.text
    r = mems.patch(carol, mem, access=None)
    assert code(r) == (403, "not_authorized"), r.text
    assert mems.detail(bob, mem)["access"] == tight

    # The first Human (not named) does, and the creator does
    r = mems.patch(ada, mem, access={"humans": [], "workspaces": []})
    assert r.status_code == 200, r.text
    assert code(mems.show(carol, mem)) == (404, "not_found")
    # (the creator and the first Human always reach it)
    assert mems.detail(bob, mem)["name"] == "runbooks"
    r = mems.patch(bob, mem, access=None)
    assert r.status_code == 200, r.text
    assert mems.detail(carol, mem)["access"] is None


# ---- the listing ------------------------------------------------------------------------------------------


def test_the_listing_pages_through_every_visible_memory(api: Api, mems: Memories) -> None:
    ada = api.account()
    bob = api.human(ada, "bob")
    made = [mems.made(ada, f"notes-{i}")["memory_id"] for i in range(5)]
    hidden = mems.made(ada, "secret", access={"humans": [], "workspaces": []})["memory_id"]
    helper = api.agent(ada, "helper")
    assert mems.attach(ada, helper.public_id, [rw(made[1])]).status_code == 200

    # Pages of two walk every Memory once, in a stable order
    seen: list[str] = []
    pages = 0
    cursor: str | None = None
    while True:
        params = {"limit": "2"} if cursor is None else {"limit": "2", "cursor": cursor}
        r = mems.listing(ada, **params)
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body["memories"]) <= 2
        seen += [m["memory_id"] for m in body["memories"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted([*made, hidden]) and len(seen) == 6 and pages == 3

    # Each entry is the summary plus its attachment count
    rows = {m["memory_id"]: m for m in mems.listing(ada, limit="100").json()["memories"]}
    assert rows[made[1]]["attachment_count"] == 1
    assert rows[made[0]]["attachment_count"] == 0
    assert rows[made[0]]["name"] == "notes-0" and rows[made[0]]["source"] == "native"

    # Bob's pages skip the Memory he cannot see
    assert sorted(mems.listed(bob)) == sorted(made)
    one = mems.listing(bob, limit="5").json()
    assert len(one["memories"]) == 5 and hidden not in [m["memory_id"] for m in one["memories"]]


@pytest.mark.parametrize(
    "params",
    [{"limit": "0"}, {"limit": "101"}, {"limit": "-1"}, {"limit": "ten"}, {"cursor": "not-a-cursor"}],
)
def test_a_bad_limit_or_cursor_is_refused(api: Api, mems: Memories, params: dict[str, str]) -> None:
    ada = api.account()
    mems.made(ada)
    r = mems.listing(ada, **params)
    assert code(r) == (400, "parameter_invalid"), r.text


# ---- agents ---------------------------------------------------------------------------------------------


def test_an_unattached_agent_finds_nothing(api: Api, mems: Memories) -> None:
    ada = api.account()
    mem = with_note(mems, ada)
    helper = api.agent(ada, "helper")
    before = current(mems, ada, mem)
    assert code(mems.show(helper, mem)) == (404, "not_found")
    assert code(mems.files(helper, mem)) == (404, "not_found")
    assert code(mems.show_file(helper, mem, NOTE)) == (404, "not_found")
    assert code(mems.write(helper, mem, NOTE, "helper", before)) == (404, "not_found")
    assert code(mems.lease(helper, mem, NOTE, 10)) == (404, "not_found")
    assert mems.listed(helper) == []
    assert mems.effective(ada, helper.public_id) == []
    assert current(mems, ada, mem) == before


def test_a_read_write_attachment_lets_the_agent_write_with_its_own_token(api: Api, mems: Memories) -> None:
    ada = api.account()
    mem = with_note(mems, ada)
    helper = api.agent(ada, "helper")
    assert mems.attach(ada, helper.public_id, [rw(mem)]).status_code == 200
    assert mem in mems.listed(helper)
    w = mems.write(helper, mem, NOTE, "v1 by helper\n", current(mems, helper, mem))
    assert w.status_code == 201, w.text
    assert w.json()["file"]["written_by"] == {"kind": "agent", "public_id": helper.public_id, "name": "helper"}
    assert mems.content(ada, mem, NOTE) == "v1 by helper\n"
    assert mems.detail(ada, mem)["written_by"]["public_id"] == helper.public_id


def test_a_read_only_attachment_reads_but_every_change_is_refused(api: Api, mems: Memories) -> None:
    ada = api.account()
    mem = with_note(mems, ada)
    helper = api.agent(ada, "helper")
    assert mems.attach(ada, helper.public_id, [ro(mem)]).status_code == 200
    assert mems.content(helper, mem, NOTE) == "v0\n"
    before = current(mems, helper, mem)
    pid, lv = before
    for r in (
        mems.write(helper, mem, NOTE, "helper", before),
        mems.write(helper, mem, "fresh.md", "helper"),
        mems.verb(
            helper,
            mem,
            "edit",
            path=NOTE,
            old_text="v0",
            new_text="x",
            expected_public_id=pid,
            expected_lock_version=lv,
        ),
        mems.verb(helper, mem, "delete", path=NOTE, expected_public_id=pid, expected_lock_version=lv),
    ):
        assert code(r) == (403, "memory_read_only"), r.text
    assert current(mems, ada, mem) == before
    assert mems.content(ada, mem, NOTE) == "v0\n"
    assert mems.detail(ada, mem)["file_count"] == 1


def test_rotating_the_agents_token_cuts_the_old_one_at_once(api: Api, mems: Memories) -> None:
    ada = api.account()
    mem = with_note(mems, ada)
    helper = api.agent(ada, "helper")
    assert mems.attach(ada, helper.public_id, [rw(mem)]).status_code == 200
    assert mems.write(helper, mem, NOTE, "v1\n", current(mems, helper, mem)).status_code == 201

    r = api.post(f"/agents/{helper.public_id}/credentials/rotate", ada)
    assert r.status_code == 200, r.text
    fresh = Who(r.json()["token"], helper.public_id, "agent")
    assert fresh.token != helper.token

    # The old token no longer writes, nor reads
    before = current(mems, ada, mem)
    assert code(mems.write(helper, mem, NOTE, "old token\n", before)) == (401, "not_authenticated")
    assert code(mems.show_file(helper, mem, NOTE)) == (401, "not_authenticated")
    assert current(mems, ada, mem) == before
    assert mems.content(ada, mem, NOTE) == "v1\n"

    # The new one writes, and the attachment survived the rotation
    w = mems.write(fresh, mem, NOTE, "v2 new token\n", before)
    assert w.status_code == 201, w.text
    assert mems.content(ada, mem, NOTE) == "v2 new token\n"
    assert mems.attached(ada, helper.public_id) == [{"memory_id": mem, "mode": "readwrite", "read_first": True}]
