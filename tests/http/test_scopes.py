"""The five scopes through the conversation door: who owns user/, agent/ and speaker/ rows, the agent's
memory_context_limit, unavailable sources, and the per-request speaker selector."""

from __future__ import annotations

import pytest
import requests

from ..support import (
    AGENT,
    CONV,
    SPEAKER,
    USER,
    WORKSPACE,
    Api,
    Who,
    alias,
    bindings,
    code,
    conv_base,
    created,
    listed,
    pair,
)


def content(r: requests.Response) -> str:
    assert r.status_code == 200, r.text
    return str(r.json()["memory"]["content"])


# ---- user/ ------------------------------------------------------------------------------------------


def test_user_root_needs_an_explicit_binding(api: Api) -> None:
    # Given a conversation on the default roots
    ada = api.account()
    ws = api.workspace(ada)
    base = conv_base(ws, api.conversation(ada, ws))
    # When the Human writes or reads user/ through it
    # Then the root is not there: the defaults never include user/
    assert code(api.write(ada, base, "user/prefs.md", "tea")) == (422, "memory_scope_unavailable")
    assert code(api.show(ada, base, "user/prefs.md")) == (422, "memory_scope_unavailable")
    assert code(api.grep(ada, base, "tea", path="user/")) == (422, "memory_scope_unavailable")


def test_user_rows_follow_the_human_across_workspaces(api: Api) -> None:
    # Given one Human with a user binding on a conversation in each of two workspaces
    ada = api.account()
    ws1, ws2 = api.workspace(ada, "one"), api.workspace(ada, "two")
    c1 = api.conversation(ada, ws1, memory_context=bindings(CONV, USER))
    c2 = api.conversation(ada, ws2, memory_context=bindings(CONV, USER))
    # When she writes user/prefs.md in the first
    written = created(api.write(ada, conv_base(ws1, c1), "user/prefs.md", "tea, no sugar"))
    # Then the second workspace's conversation reads the same row
    shown = api.show(ada, conv_base(ws2, c2), "user/prefs.md")
    assert content(shown) == "tea, no sugar"
    assert pair(shown) == written
    assert "user/prefs.md" in listed(api, ada, conv_base(ws2, c2))
    # And so does her own profile door
    assert content(api.show(ada, "/profile/memory", "user/prefs.md")) == "tea, no sugar"


def test_user_root_is_always_the_calling_humans_own(api: Api) -> None:
    # Given two Humans sharing a conversation that binds user/, and Ada's note in her user/
    ada = api.account()
    bob = api.human(ada)
    ws = api.workspace(ada)
    api.member(ada, ws, bob)
    base = conv_base(ws, api.conversation(ada, ws, memory_context=bindings(CONV, USER)))
    ada_pair = created(api.write(ada, base, "user/prefs.md", "ada's"))
    # When Bob reads, greps, edits with Ada's pair, and writes the same path
    # Then he only ever meets his own user/: Ada's row is never reached
    assert code(api.show(bob, base, "user/prefs.md")) == (404, "memory_not_found")
    assert "user/prefs.md" not in listed(api, bob, base)
    assert api.grep(bob, base, "ada").json()["matches"] == []
    assert code(api.edit(bob, base, "user/prefs.md", "ada", "bob", ada_pair)) == (409, "stale_object")
    assert code(api.delete(bob, base, "user/prefs.md", ada_pair)) == (409, "stale_object")
    bob_pair = created(api.write(bob, base, "user/prefs.md", "bob's"))
    assert bob_pair[0] != ada_pair[0]
    assert content(api.show(ada, base, "user/prefs.md")) == "ada's"
    assert content(api.show(bob, base, "user/prefs.md")) == "bob's"


def test_an_agent_never_resolves_user_through_its_steward(api: Api) -> None:
    # Given Ada's note in her user/ and her program answering a conversation that binds user/
    ada = api.account()
    ws = api.workspace(ada)
    bot = api.agent(ada)
    conv = api.conversation(
        ada, ws, answering_agent_public_id=bot.public_id, memory_context=bindings(CONV, USER, AGENT)
    )
    base = conv_base(ws, conv)
    created(api.write(ada, base, "user/secret.md", "ada's diary"))
    # When the agent lists, greps, reads or writes user/
    # Then the root is unavailable to it: left out of unqualified reads, refused on an explicit path
    assert "user/secret.md" not in listed(api, bot, base)
    assert api.grep(bot, base, "diary").json()["matches"] == []
    assert code(api.show(bot, base, "user/secret.md")) == (422, "memory_scope_unavailable")
    assert code(api.write(bot, base, "user/new.md", "x")) == (422, "memory_scope_unavailable")
    assert code(api.grep(bot, base, "diary", path="user/")) == (422, "memory_scope_unavailable")
    effective = api.show_conversation(bot, ws, conv)["effective_memory_context"]["bindings"]
    assert [b["name"] for b in effective] == ["conversation", "agent"]


# ---- agent/ -----------------------------------------------------------------------------------------


def test_agent_rows_are_the_answerers_and_follow_it_across_workspaces(api: Api) -> None:
    # Given a paired program answering conversations in two workspaces
    ada = api.account()
    bot = api.agent(ada)
    ws1, ws2 = api.workspace(ada, "one"), api.workspace(ada, "two")
    b1 = conv_base(ws1, api.conversation(ada, ws1, answering_agent_public_id=bot.public_id))
    b2 = conv_base(ws2, api.conversation(ada, ws2, answering_agent_public_id=bot.public_id))
    # When it writes agent/notes.md in the first
    written = created(api.write(bot, b1, "agent/notes.md", "the customer prefers email"))
    # Then the same row answers in the second, for the agent and for its steward
    assert pair(api.show(bot, b2, "agent/notes.md")) == written
    assert content(api.show(ada, b2, "agent/notes.md")) == "the customer prefers email"
    # And its own profile door serves it too
    assert pair(api.show(bot, "/profile/memory", "agent/notes.md")) == written


def test_the_stewards_user_root_never_carries_agent_rows(api: Api) -> None:
    # Given a program's agent/ note and its steward on a conversation binding both user/ and agent/
    ada = api.account()
    bot = api.agent(ada)
    ws = api.workspace(ada)
    base = conv_base(
        ws,
        api.conversation(ada, ws, answering_agent_public_id=bot.public_id, memory_context=bindings(CONV, USER, AGENT)),
    )
    created(api.write(bot, base, "agent/notes.md", "agent only"))
    # When the steward reads her user/ rows
    # Then the agent's note is not among them: agent/ and user/ are different rows
    assert code(api.show(ada, base, "user/notes.md")) == (404, "memory_not_found")
    assert listed(api, ada, "/profile/memory") == []
    assert listed(api, ada, base) == ["agent/notes.md"]


def test_a_human_answered_conversation_has_no_agent_root(api: Api) -> None:
    # Given a conversation answered by a Human (no answering agent)
    ada = api.account()
    ws = api.workspace(ada)
    conv = api.conversation(ada, ws)
    base = conv_base(ws, conv)
    # When agent/ is used, or configured explicitly
    # Then it names no row: refused memory_scope_unavailable, at configuration time too
    assert code(api.write(ada, base, "agent/notes.md", "x")) == (422, "memory_scope_unavailable")
    r = api.post(
        f"/workspaces/{ws}/conversations/{conv}/memory_context", ada, {"memory_context": bindings(CONV, AGENT)}
    )
    assert code(r) == (422, "memory_scope_unavailable")
    r = api.post(
        f"/workspaces/{ws}/conversations",
        ada,
        {"conversation": {"memory_context": bindings(CONV, {**AGENT, "access": "read"})}},
    )
    assert code(r) == (422, "memory_scope_unavailable")
    # And the refusal changed nothing
    shown = api.show_conversation(ada, ws, conv)
    assert shown["memory_context"] is None
    assert shown["context_revision"] == 0


def test_a_sibling_agent_never_reads_another_agents_rows(api: Api) -> None:
    # Given two programs of one steward, both members of the room; the first answers the conversation
    ada = api.account()
    ws = api.workspace(ada)
    bot, sibling = api.agent(ada, "bot"), api.agent(ada, "sibling")
    api.member(ada, ws, sibling)
    base = conv_base(ws, api.conversation(ada, ws, answering_agent_public_id=bot.public_id))
    created(api.write(bot, base, "agent/notes.md", "private to bot"))
    # When the sibling opens the same conversation
    # Then agent/ is not there for it, and its own agent/ rows are elsewhere
    assert "agent/notes.md" not in listed(api, sibling, base)
    assert code(api.show(sibling, base, "agent/notes.md")) == (422, "memory_scope_unavailable")
    assert code(api.write(sibling, base, "agent/notes.md", "x")) == (422, "memory_scope_unavailable")
    assert listed(api, sibling, "/profile/memory") == []


# ---- speaker/ ---------------------------------------------------------------------------------------


def test_speaker_rows_belong_to_the_agent_and_speaker_pair(api: Api) -> None:
    # Given two programs and two speakers in one account
    ada = api.account()
    ws = api.workspace(ada)
    a, b = api.agent(ada, "a"), api.agent(ada, "b")
    sam, tess = api.speaker(ada, a, "sam"), api.speaker(ada, a, "tess")

    def conv_for(agent: Who, speaker: str) -> str:
        subject = {**SPEAKER, "speaker_public_id": speaker}
        return conv_base(
            ws,
            api.conversation(
                ada, ws, answering_agent_public_id=agent.public_id, memory_context=bindings(CONV, subject)
            ),
        )

    a_sam, b_sam, a_tess = conv_for(a, sam), conv_for(b, sam), conv_for(a, tess)
    # When agent A notes something about Sam
    written = created(api.write(a, a_sam, "speaker/prefs.md", "A about Sam"))
    # Then agent B speaking with the same Sam has its own, separate document
    assert code(api.show(b, b_sam, "speaker/prefs.md")) == (404, "memory_not_found")
    b_written = created(api.write(b, b_sam, "speaker/prefs.md", "B about Sam"))
    assert b_written[0] != written[0]
    # And agent A speaking with Tess has a separate one as well
    assert code(api.show(a, a_tess, "speaker/prefs.md")) == (404, "memory_not_found")
    # While A with Sam in another conversation meets the same row again
    assert content(api.show(a, conv_for(a, sam), "speaker/prefs.md")) == "A about Sam"
    assert content(api.show(b, b_sam, "speaker/prefs.md")) == "B about Sam"


def test_speaker_root_never_falls_back(api: Api) -> None:
    # Given an agent-answered conversation on the default roots, with agent/ and user/ notes around
    ada = api.account()
    ws = api.workspace(ada)
    bot = api.agent(ada)
    base = conv_base(
        ws,
        api.conversation(
            ada, ws, answering_agent_public_id=bot.public_id, memory_context=bindings(CONV, USER, AGENT, SPEAKER)
        ),
    )
    created(api.write(bot, base, "agent/prefs.md", "agent's"))
    created(api.write(ada, base, "user/prefs.md", "ada's"))
    # When speaker/ is used with no subject bound and none selected
    # Then it is unavailable: it never reads agent/ or user/ instead
    for who in (bot, ada):
        assert code(api.show(who, base, "speaker/prefs.md")) == (422, "memory_scope_unavailable")
        assert code(api.write(who, base, "speaker/prefs.md", "x")) == (422, "memory_scope_unavailable")
        assert not [p for p in listed(api, who, base) if p.startswith("speaker/")]


# ---- the agent's memory_context_limit ---------------------------------------------------------------


def test_a_limit_making_workspace_read_only_refuses_writes(api: Api) -> None:
    # Given a program whose limit allows workspace/ read-only, answering a conversation
    ada = api.account()
    ws = api.workspace(ada)
    limit = bindings(CONV, {**WORKSPACE, "access": "read"}, AGENT)
    bot = api.agent(ada, limit=limit)
    conv = api.conversation(ada, ws, answering_agent_public_id=bot.public_id)
    base = conv_base(ws, conv)
    created(api.write(ada, f"/workspaces/{ws}/memory", "workspace/rules.md", "be kind"))
    # When the agent (or anyone) writes workspace/ through that conversation
    # Then read-only wins: memory_read_only, while reads still work
    for who in (bot, ada):
        assert code(api.write(who, base, "workspace/new.md", "x")) == (403, "memory_read_only")
        assert content(api.show(who, base, "workspace/rules.md")) == "be kind"
    shown = api.show(bot, base, "workspace/rules.md")
    assert code(api.edit(bot, base, "workspace/rules.md", "kind", "nice", pair(shown))) == (403, "memory_read_only")
    assert code(api.delete(bot, base, "workspace/rules.md", pair(shown))) == (403, "memory_read_only")
    effective = api.show_conversation(bot, ws, conv)["effective_memory_context"]["bindings"]
    assert {b["name"]: b["access"] for b in effective} == {
        "conversation": "read_write",
        "workspace": "read",
        "agent": "read_write",
    }


def test_a_limit_never_adds_a_root(api: Api) -> None:
    # Given a limit that allows user/ but not speaker/, on a conversation that binds no user/
    ada = api.account()
    ws = api.workspace(ada)
    bot = api.agent(ada, limit=bindings(CONV, USER))
    base = conv_base(ws, api.conversation(ada, ws, answering_agent_public_id=bot.public_id))
    # When the steward uses user/ and agent/ through it
    # Then user/ is still absent (the limit only narrows) and agent/ is gone (not in the limit)
    assert code(api.write(ada, base, "user/x.md", "x")) == (422, "memory_scope_unavailable")
    assert code(api.write(ada, base, "agent/x.md", "x")) == (422, "memory_scope_unavailable")
    assert code(api.write(bot, base, "agent/x.md", "x")) == (422, "memory_scope_unavailable")
    assert api.write(bot, base, "conversation/x.md", "x").status_code == 201


def test_a_limit_outside_the_grammar_is_refused(api: Api) -> None:
    ada = api.account()
    bad = bindings({"name": "Bad", "scope": "user", "access": "read"})
    r = api.post("/agents", ada, {"agent": {"name": "bot", "kind": "program", "memory_context_limit": bad}})
    assert code(r) == (422, "validation_failed")


# ---- missing and inaccessible sources ---------------------------------------------------------------


def test_an_inaccessible_source_is_left_out_of_reads_and_refused_by_path(api: Api) -> None:
    # Given a conversation aliasing another one of the room as group/, answered by a program that is not
    # a member of the room (so the aliased conversation is not visible to it)
    ada = api.account()
    ws = api.workspace(ada)
    bot = api.agent(ada)
    other = api.conversation(ada, ws)
    created(api.write(ada, conv_base(ws, other), "conversation/plan.md", "deadline friday"))
    group = alias(other)
    conv = api.conversation(ada, ws, answering_agent_public_id=bot.public_id, memory_context=bindings(CONV, group))
    base = conv_base(ws, conv)
    assert "group/plan.md" in listed(api, ada, base)
    # When the agent lists, greps, or names the alias
    # Then the alias is left out of the listing and of grep, and is unavailable by path
    assert listed(api, bot, base) == []
    assert api.grep(bot, base, "deadline").json()["matches"] == []
    assert code(api.show(bot, base, "group/plan.md")) == (422, "memory_scope_unavailable")
    assert code(api.grep(bot, base, "deadline", path="group/")) == (422, "memory_scope_unavailable")
    names = [b["name"] for b in api.show_conversation(bot, ws, conv)["effective_memory_context"]["bindings"]]
    assert names == ["conversation"]


# ---- the per-request speaker selector ---------------------------------------------------------------


def test_the_speaker_selector_works_on_every_verb_and_stores_nothing(api: Api) -> None:
    # Given a program with a speaker it controls, answering a conversation on the default roots
    ada = api.account()
    ws = api.workspace(ada)
    bot = api.agent(ada)
    sam = api.speaker(ada, bot, "sam")
    conv = api.conversation(ada, ws, answering_agent_public_id=bot.public_id)
    base = conv_base(ws, conv)
    sel = {"speaker_public_id": sam}
    # When it writes, shows, edits, greps, lists and deletes speaker/ rows selecting Sam per request
    written = created(api.write(bot, base, "speaker/prefs.md", "likes mornings", speaker_public_id=sam))
    assert content(api.show(bot, base, "speaker/prefs.md", **sel)) == "likes mornings"
    edited = api.edit(bot, base, "speaker/prefs.md", "mornings", "evenings", written, **sel)
    assert edited.status_code == 200, edited.text
    assert api.grep(bot, base, "evenings", **sel).json()["matches"] == [
        {"path": "speaker/prefs.md", "line_number": 1, "text": "likes evenings"}
    ]
    assert listed(api, bot, base, **{"memory[speaker_public_id]": sam}) == ["speaker/prefs.md"]
    # Then without the selector the root is unbound again: nothing was stored
    assert listed(api, bot, base) == []
    assert code(api.show(bot, base, "speaker/prefs.md")) == (422, "memory_scope_unavailable")
    shown = api.show_conversation(bot, ws, conv)
    assert shown["memory_context"] is None
    assert "speaker" not in [b["name"] for b in shown["effective_memory_context"]["bindings"]]
    assert api.delete(bot, base, "speaker/prefs.md", pair(edited), **sel).status_code == 204
    assert code(api.show(bot, base, "speaker/prefs.md", **sel)) == (404, "memory_not_found")


def test_the_selector_binds_only_the_relative_speaker_root(api: Api) -> None:
    # Given an explicit speaker binding vip/ for Sam beside the relative speaker/ root
    ada = api.account()
    ws = api.workspace(ada)
    bot = api.agent(ada)
    sam, tess = api.speaker(ada, bot, "sam"), api.speaker(ada, bot, "tess")
    vip = {"name": "vip", "scope": "speaker", "access": "read_write", "speaker_public_id": sam}
    base = conv_base(
        ws,
        api.conversation(ada, ws, answering_agent_public_id=bot.public_id, memory_context=bindings(CONV, SPEAKER, vip)),
    )
    created(api.write(bot, base, "vip/prefs.md", "sam's"))
    # When the agent selects Tess for this request
    created(api.write(bot, base, "speaker/prefs.md", "tess's", speaker_public_id=tess))
    # Then speaker/ is the (agent, Tess) pair while vip/ stays Sam's
    assert content(api.show(bot, base, "vip/prefs.md", speaker_public_id=tess)) == "sam's"
    assert content(api.show(bot, base, "speaker/prefs.md", speaker_public_id=sam)) == "sam's"
    assert listed(api, bot, base, **{"memory[speaker_public_id]": tess}) == ["speaker/prefs.md", "vip/prefs.md"]


@pytest.mark.parametrize("verb", ["list", "show", "write", "edit", "grep", "delete"])
def test_a_selector_the_agent_does_not_control_is_refused(api: Api, verb: str) -> None:
    # Given agent A answering a conversation, a speaker of A's sibling B, a speaker of another account,
    # and a UUID naming no speaker at all
    ada = api.account()
    ws = api.workspace(ada)
    a, b = api.agent(ada, "a"), api.agent(ada, "b")
    mine, theirs = api.speaker(ada, a, "mine"), api.speaker(ada, b, "theirs")
    eve = api.account("other", "eve")
    foreign = api.speaker(eve, api.agent(eve, "e"), "foreign")
    base = conv_base(ws, api.conversation(ada, ws, answering_agent_public_id=a.public_id))
    written = created(api.write(a, base, "speaker/p.md", "x", speaker_public_id=mine))

    def call(who: Who, selector: str) -> requests.Response:
        sel = {"speaker_public_id": selector}
        if verb == "list":
            return api.ls(who, base, **{"memory[speaker_public_id]": selector})
        if verb == "show":
            return api.show(who, base, "speaker/p.md", **sel)
        if verb == "write":
            return api.write(who, base, "speaker/p.md", "y", written, **sel)
        if verb == "edit":
            return api.edit(who, base, "speaker/p.md", "x", "y", written, **sel)
        if verb == "grep":
            return api.grep(who, base, "x", **sel)
        return api.delete(who, base, "speaker/p.md", written, **sel)

    # When the selector names a speaker A does not control, or A's speaker is sent by its steward
    # Then the request is refused not_authorized, and the row is untouched
    for who, selector in ((a, theirs), (a, foreign), (a, "01990000-0000-7000-8000-000000000001"), (ada, mine)):
        assert code(call(who, selector)) == (403, "not_authorized"), (who.kind, selector)
    assert pair(api.show(a, base, "speaker/p.md", speaker_public_id=mine)) == written
    # And a selector that is not a UUID is a malformed parameter
    assert code(call(a, "sam")) == (400, "parameter_invalid")
