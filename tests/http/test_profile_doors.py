"""The other doors (the workspace's, the profile's, a named definition's), agents, speakers and rotation."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests

from ..support import CONV, USER, Api, Who, bindings, code, conv_base, listed, pair, ws_base

USER_BINDING = bindings(CONV, USER)


def revision(api: Api, who: Who, ws: str, conv: str) -> int:
    return int(api.show_conversation(who, ws, conv)["context_revision"])


# ---- the workspace's door ---------------------------------------------------------------------------


def test_the_workspace_door_serves_the_rooms_rows_and_bumps_nothing(api: Api) -> None:
    # Given a room with a conversation holding notes in both its own and the room's roots
    ada = api.account()
    ws = api.workspace(ada)
    conv = api.conversation(ada, ws)
    base, door = conv_base(ws, conv), ws_base(ws)
    api.write(ada, base, "conversation/plan.md", "conversation only")
    through_conv = api.write(ada, base, "workspace/rules.md", "be kind")
    before = revision(api, ada, ws, conv)
    # When the workspace's own door lists, shows, greps, writes, edits and deletes
    assert listed(api, ada, door) == ["workspace/rules.md"]
    shown = api.show(ada, door, "workspace/rules.md")
    assert pair(shown) == pair(through_conv)
    assert api.grep(ada, door, "kind|only").json()["matches"] == [
        {"path": "workspace/rules.md", "line_number": 1, "text": "be kind"}
    ]
    written = api.write(ada, door, "workspace/hours.md", "nine to five")
    assert written.status_code == 201, written.text
    edited = api.edit(ada, door, "workspace/rules.md", "kind", "nice", pair(shown))
    assert edited.status_code == 200, edited.text
    assert api.delete(ada, door, "workspace/hours.md", pair(written)).status_code == 204
    # Then only workspace/ rows were ever served, the conversation sees the same rows,
    # and no conversation's revision moved
    assert code(api.show(ada, door, "conversation/plan.md")) == (422, "memory_scope_unavailable")
    assert code(api.write(ada, door, "user/x.md", "x")) == (422, "memory_scope_unavailable")
    assert api.show(ada, base, "workspace/rules.md").json()["memory"]["content"] == "be nice"
    assert revision(api, ada, ws, conv) == before


def test_the_workspace_door_follows_membership(api: Api) -> None:
    # Given a room with a note, a viewer, a stranger of the account, and a program answering there unlisted
    ada = api.account()
    ws = api.workspace(ada)
    vic, ozzy = api.human(ada, "vic"), api.human(ada, "ozzy")
    api.member(ada, ws, vic, role="viewer")
    bot = api.agent(ada)
    api.conversation(ada, ws, answering_agent_public_id=bot.public_id)
    door = ws_base(ws)
    written = pair(api.write(ada, door, "workspace/rules.md", "be kind"))
    # When each uses the workspace's door
    # Then the viewer reads but cannot write, and the others cannot see the room
    assert listed(api, vic, door) == ["workspace/rules.md"]
    assert code(api.write(vic, door, "workspace/rules.md", "x", written)) == (403, "not_authorized")
    assert code(api.delete(vic, door, "workspace/rules.md", written)) == (403, "not_authorized")
    for stranger in (ozzy, bot):
        assert code(api.ls(stranger, door)) == (404, "not_found")
        assert code(api.show(stranger, door, "workspace/rules.md")) == (404, "not_found")
    assert code(api.get(door)) == (401, "not_authenticated")


# ---- the profile door -------------------------------------------------------------------------------


def test_the_profile_door_serves_the_calling_humans_user_rows(api: Api) -> None:
    # Given Ada's note written through a conversation binding user/
    ada = api.account()
    bob = api.human(ada)
    ws = api.workspace(ada)
    base = conv_base(ws, api.conversation(ada, ws, memory_context=USER_BINDING))
    via_conv = api.write(ada, base, "user/prefs.md", "tea")
    # When she uses her profile door
    shown = api.show(ada, "/profile/memory", "user/prefs.md")
    # Then it is the same row, and changes there show through the conversation
    assert pair(shown) == pair(via_conv)
    edited = api.edit(ada, "/profile/memory", "user/prefs.md", "tea", "coffee", pair(shown))
    assert edited.status_code == 200, edited.text
    assert api.show(ada, base, "user/prefs.md").json()["memory"]["content"] == "coffee"
    assert api.grep(ada, "/profile/memory", "coffee").json()["matches"][0]["path"] == "user/prefs.md"
    # And nothing but user/ is served there, and Bob's profile door is his own
    assert code(api.write(ada, "/profile/memory", "workspace/x.md", "x")) == (422, "memory_scope_unavailable")
    assert code(api.show(ada, "/profile/memory", "agent/x.md")) == (422, "memory_scope_unavailable")
    assert listed(api, bob, "/profile/memory") == []
    assert code(api.edit(bob, "/profile/memory", "user/prefs.md", "coffee", "x", pair(edited))) == (409, "stale_object")
    assert code(api.get("/profile/memory")) == (401, "not_authenticated")


def test_the_profile_door_serves_a_paired_programs_own_agent_rows(api: Api) -> None:
    # Given a paired program answering a conversation, and a sibling program of the same steward
    ada = api.account()
    ws = api.workspace(ada)
    bot, sibling = api.agent(ada, "bot"), api.agent(ada, "sibling")
    base = conv_base(ws, api.conversation(ada, ws, answering_agent_public_id=bot.public_id))
    # When the program writes its notes through its profile door
    written = api.write(bot, "/profile/memory", "agent/notes.md", "remember the milk")
    assert written.status_code == 201, written.text
    # Then they are its agent/ rows wherever it answers; user/ is not its to have
    assert pair(api.show(bot, base, "agent/notes.md")) == pair(written)
    assert code(api.show(bot, "/profile/memory", "user/notes.md")) == (422, "memory_scope_unavailable")
    # And the sibling's profile door is the sibling's own, the steward's is her user/
    assert listed(api, sibling, "/profile/memory") == []
    assert listed(api, ada, "/profile/memory") == []
    assert code(api.delete(sibling, "/profile/memory", "agent/notes.md", pair(written))) == (409, "stale_object")


# ---- a named definition's door --------------------------------------------------------------------


def test_the_definition_door_serves_the_stewards_named_definition(api: Api) -> None:
    # Given a named definition answering a conversation
    ada = api.account()
    bob = api.human(ada)
    ws = api.workspace(ada)
    r = api.post("/agents", ada, {"agent": {"name": "support-bot", "kind": "definition"}})
    assert r.status_code == 201, r.text
    assert "token" not in r.json()
    definition = r.json()["agent"]["public_id"]
    assert r.json()["agent"]["steward_public_id"] == ada.public_id
    base = conv_base(ws, api.conversation(ada, ws, answering_agent_public_id=definition))
    door = "/profile/agents/support-bot/memory"
    # When its steward writes its notes through the definition's door
    written = api.write(ada, door, "agent/tone.md", "friendly")
    assert written.status_code == 201, written.text
    # Then they are the definition's agent/ rows, as seen through a conversation it answers
    assert pair(api.show(ada, base, "agent/tone.md")) == pair(written)
    assert listed(api, ada, door) == ["agent/tone.md"]
    assert code(api.show(ada, door, "user/tone.md")) == (422, "memory_scope_unavailable")
    # And another Human cannot find it, an agent token is not a steward, an unknown name is nothing
    assert code(api.ls(bob, door)) == (404, "not_found")
    assert code(api.show(bob, door, "agent/tone.md")) == (404, "not_found")
    bot = api.agent(ada, "bot")
    assert code(api.ls(bot, door)) == (403, "not_authorized")
    assert code(api.ls(ada, "/profile/agents/nobody/memory")) == (404, "not_found")
    assert code(api.ls(ada, "/profile/agents/bot/memory")) == (404, "not_found")


def test_a_definition_name_is_unique_per_steward(api: Api) -> None:
    ada = api.account()
    bob = api.human(ada)
    assert api.post("/agents", ada, {"agent": {"name": "helper", "kind": "definition"}}).status_code == 201
    again = api.post("/agents", ada, {"agent": {"name": "helper", "kind": "definition"}})
    assert code(again) == (409, "already_exists")
    assert api.post("/agents", bob, {"agent": {"name": "helper", "kind": "definition"}}).status_code == 201
    bad = api.post("/agents", ada, {"agent": {"name": "Not A Slug", "kind": "definition"}})
    assert code(bad) == (400, "parameter_invalid")
    assert code(api.post("/agents", ada, {"agent": {"name": "x", "kind": "robot"}})) == (400, "parameter_invalid")
    assert code(api.post("/agents", ada, {"agent": {"kind": "program"}})) == (400, "parameter_missing")


# ---- agents, speakers and members -------------------------------------------------------------------


def test_only_a_human_creates_agents_and_only_the_agent_or_its_steward_adds_speakers(api: Api) -> None:
    ada = api.account()
    bob = api.human(ada)
    bot = api.agent(ada)
    # An agent's token cannot create agents
    assert code(api.post("/agents", bot, {"agent": {"name": "x", "kind": "program"}})) == (403, "not_authorized")
    # The agent itself and its steward add its speakers; another Human may not
    body = {"speaker": {"name": "sam", "agent_public_id": bot.public_id}}
    own = api.post("/speakers", bot, body)
    assert own.status_code == 201, own.text
    assert own.json()["speaker"]["agent_public_id"] == bot.public_id
    assert api.post("/speakers", ada, body).status_code == 201
    assert code(api.post("/speakers", bob, body)) == (403, "not_authorized")
    eve = api.account("other", "eve")
    assert code(api.post("/speakers", eve, body)) == (404, "not_found")


def test_an_agent_can_be_a_member_of_a_room(api: Api) -> None:
    ada = api.account()
    ws = api.workspace(ada)
    bot = api.agent(ada)
    door = ws_base(ws)
    assert code(api.ls(bot, door)) == (404, "not_found")
    api.member(ada, ws, bot)
    assert api.write(bot, door, "workspace/hello.md", "hi").status_code == 201
    eve = api.account("other", "eve")
    foreign = api.agent(eve)
    r = api.post(f"/workspaces/{ws}/members", ada, {"member": {"agent_public_id": foreign.public_id}})
    assert code(r) == (404, "not_found")


# ---- the speaker selector on the other doors ---------------------------------------------------------


def test_the_speaker_selector_is_checked_on_every_door(api: Api) -> None:
    # Given a program member of a room, with a speaker of its own and one of a sibling
    ada = api.account()
    ws = api.workspace(ada)
    bot, sibling = api.agent(ada, "bot"), api.agent(ada, "sibling")
    api.member(ada, ws, bot)
    mine, theirs = api.speaker(ada, bot, "mine"), api.speaker(ada, sibling, "theirs")
    api.post("/agents", ada, {"agent": {"name": "desk", "kind": "definition"}})
    # When the selector names a speaker the caller controls, it is accepted and changes nothing
    assert api.ls(bot, ws_base(ws), **{"memory[speaker_public_id]": mine}).status_code == 200
    assert api.write(bot, "/profile/memory", "agent/a.md", "x", speaker_public_id=mine).status_code == 201
    # Then one it does not control, or any selector from a Human, is not_authorized
    assert code(api.grep(bot, ws_base(ws), "x", speaker_public_id=theirs)) == (403, "not_authorized")
    assert code(api.show(bot, "/profile/memory", "agent/a.md", speaker_public_id=theirs)) == (403, "not_authorized")
    assert code(api.ls(ada, ws_base(ws), **{"memory[speaker_public_id]": mine})) == (403, "not_authorized")
    assert code(api.ls(ada, "/profile/memory", **{"memory[speaker_public_id]": mine})) == (403, "not_authorized")
    assert code(api.ls(ada, "/profile/agents/desk/memory", **{"memory[speaker_public_id]": mine})) == (
        403,
        "not_authorized",
    )


# ---- credential rotation ----------------------------------------------------------------------------


def rotate(api: Api, who: Who, agent: Who) -> requests.Response:
    return api.post(f"/agents/{agent.public_id}/credentials/rotate", who)


def test_rotation_refuses_the_old_token_at_once(api: Api) -> None:
    # Given a paired program that has been working with its token
    ada = api.account()
    bot = api.agent(ada)
    assert api.write(bot, "/profile/memory", "agent/a.md", "x").status_code == 201
    # When its steward rotates the credential
    r = rotate(api, ada, bot)
    assert r.status_code == 200, r.text
    new = Who(r.json()["token"], bot.public_id, "agent")
    # Then the very next request with the old token is refused, and the new one sees the same rows
    assert code(api.ls(bot, "/profile/memory")) == (401, "not_authenticated")
    assert code(api.write(bot, "/profile/memory", "agent/b.md", "x")) == (401, "not_authenticated")
    assert listed(api, new, "/profile/memory") == ["agent/a.md"]


def test_only_the_steward_rotates(api: Api) -> None:
    # Given a program, another Human of the account, a Human of another account, and a definition
    ada = api.account()
    bob = api.human(ada)
    bot = api.agent(ada)
    eve = api.account("other", "eve")
    definition = api.agent(ada, "desk", kind="definition")
    # When anyone but the steward rotates, the program itself included
    # Then it is refused and the token still works
    assert code(rotate(api, bob, bot)) == (403, "not_authorized")
    assert code(rotate(api, bot, bot)) == (403, "not_authorized")
    assert code(rotate(api, eve, bot)) == (404, "not_found")
    assert code(rotate(api, None, bot)) == (401, "not_authenticated")  # type: ignore[arg-type]
    assert api.ls(bot, "/profile/memory").status_code == 200
    # And a definition has no credential to rotate
    assert code(rotate(api, ada, definition)) == (400, "parameter_invalid")


def test_racing_rotations_leave_exactly_one_valid_token(api: Api) -> None:
    # Given a paired program
    ada = api.account()
    bot = api.agent(ada)
    n = 8
    barrier = threading.Barrier(n)

    def go(_: int) -> requests.Response:
        mine = Api(api.url, api.operator_key)
        barrier.wait(timeout=30)
        return rotate(mine, ada, bot)

    # When its steward rotates it from several threads at once
    with ThreadPoolExecutor(max_workers=n) as pool:
        results = list(pool.map(go, range(n)))
    # Then every rotation either won or was refused stale_object, and exactly the winners' last token works:
    # no loser's token survives unreferenced
    winners = [r for r in results if r.status_code == 200]
    assert winners
    assert all(code(r) == (409, "stale_object") for r in results if r.status_code != 200)
    working: list[Any] = [r for r in winners if api.ls(r.json()["token"], "/profile/memory").status_code == 200]
    assert len(working) == 1
    assert code(api.ls(bot, "/profile/memory")) == (401, "not_authenticated")
