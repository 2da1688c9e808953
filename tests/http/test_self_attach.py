"""An agent grants itself nothing; whoever attaches grants only what they already reach (access.may_grant).

A program may set its own attachments (it is its own steward's delegate for that), but only within what it
reaches already, through an attachment or a tenant default: it may narrow or drop, never add. A Memory
open to every Human of the account is not the agent's until someone who reaches it attaches it.
"""

from __future__ import annotations

import pytest

from ..support import Api, code
from .orgmem import Memories, ro, rw

pytestmark = pytest.mark.http


@pytest.fixture
def mems(api: Api) -> Memories:
    return Memories(api)


def test_a_program_cannot_attach_itself_a_memory_it_does_not_reach(api: Api, mems: Memories) -> None:
    # Given a Memory open to every Human of the account, which no attachment or default gives the program
    ada = api.account()
    bot = api.agent(ada, "bot")
    mem = mems.made(ada, "house-rules", files=[{"path": "a.md", "content": "be kind\n"}])["memory_id"]
    assert code(mems.show(bot, mem)) == (404, "not_found")
    # When the program's own token sets its list with it, in either mode
    for attachment in (ro(mem), rw(mem)):
        r = mems.attach(bot, bot.public_id, [attachment])
        # Then it is refused, and the program still does not reach the Memory
        assert code(r) == (422, "validation_failed"), r.text
        assert "already reaches" in r.json()["error"]["message"]
    assert mems.attached(ada, bot.public_id) == []
    assert code(mems.show(bot, mem)) == (404, "not_found")
    assert code(mems.show_file(bot, mem, "a.md")) == (404, "not_found")
    # And once its steward attaches it, the program reaches it
    assert mems.attach(ada, bot.public_id, [ro(mem)]).status_code == 200
    assert mems.content(bot, mem, "a.md") == "be kind\n"


def test_a_program_reached_read_only_by_a_default_cannot_attach_itself_read_write(api: Api, mems: Memories) -> None:
    ada = api.account()
    bot = api.agent(ada, "bot")
    default = {"reach": "account", "mode": "readonly"}
    mem = mems.made(ada, "fleet", files=[{"path": "a.md", "content": "x\n"}], default=default)["memory_id"]
    # A readwrite attachment would be a grant: refused
    r = mems.attach(bot, bot.public_id, [rw(mem)])
    assert code(r) == (422, "validation_failed"), r.text
    assert "grants itself nothing" in r.json()["error"]["message"]
    assert mems.attached(ada, bot.public_id) == []
    # A readonly one is what it already has (here: read first), so it may
    r = mems.attach(bot, bot.public_id, [ro(mem, read_first=True)])
    assert r.status_code == 200, r.text
    # And it may drop what it has
    assert mems.attach(bot, bot.public_id, []).status_code == 200
    assert mems.attached(ada, bot.public_id) == []


def test_a_program_may_narrow_its_own_attachment_but_not_widen_it_again(api: Api, mems: Memories) -> None:
    ada = api.account()
    bot = api.agent(ada, "bot")
    mem = mems.made(ada, "notes", files=[{"path": "a.md", "content": "x\n"}])["memory_id"]
    assert mems.attach(ada, bot.public_id, [rw(mem)]).status_code == 200
    assert mems.attach(bot, bot.public_id, [ro(mem)]).status_code == 200
    r = mems.attach(bot, bot.public_id, [rw(mem)])
    assert code(r) == (422, "validation_failed"), r.text
    assert [a["mode"] for a in mems.attached(ada, bot.public_id)] == ["readonly"]


def test_a_person_attaches_only_what_they_reach(api: Api, mems: Memories) -> None:
    ada = api.account()
    bob = api.human(ada, "bob")
    helper = api.agent(bob, "helper")
    hidden = mems.made(
        ada, "board", files=[{"path": "a.md", "content": "x\n"}], access={"humans": [], "workspaces": []}
    )
    r = mems.attach(bob, helper.public_id, [ro(hidden["memory_id"])])
    assert code(r) == (422, "validation_failed"), r.text
    assert "board" not in r.text
    assert mems.attached(bob, helper.public_id) == []
