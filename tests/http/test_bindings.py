"""POST .../memory_context: the configuration replaced whole, its grammar, aliases, subjects and standing."""

from __future__ import annotations

from typing import Any

import pytest

from ..support import AGENT, CONV, SPEAKER, USER, WORKSPACE, Api, Who, alias, bindings, code, conv_base, listed, pair
from .world import OwnedRoom

UUID = "01990000-0000-7000-8000-000000000072"


class Room(OwnedRoom):
    def listed(self, who: Who | None = None) -> list[str]:
        return listed(self.api, who or self.ada, self.base)


@pytest.fixture
def room(api: Api) -> Room:
    return Room(api, *api.room())


# ---- replaced whole ---------------------------------------------------------------------------------


def test_a_missing_memory_context_field_is_parameter_missing(room: Room) -> None:
    r = room.api.post(f"/workspaces/{room.ws}/conversations/{room.conv}/memory_context", room.ada, {})
    assert code(r) == (400, "parameter_missing")
    assert room.revision() == 0


def test_an_empty_configuration_disables_every_root(room: Room) -> None:
    # Given documents in the conversation's own and the workspace's roots
    api = room.api
    api.write(room.ada, room.base, "conversation/plan.md", "x")
    api.write(room.ada, room.base, "workspace/rules.md", "y")
    # When the bindings are replaced by an empty list
    r = room.configure({"bindings": []})
    assert r.status_code == 200, r.text
    assert r.json()["conversation"]["memory_context"] == {"bindings": []}
    assert r.json()["conversation"]["effective_memory_context"] == {"bindings": []}
    # Then nothing is reachable: the listing is empty and every path is unavailable
    assert room.listed() == []
    assert code(api.show(room.ada, room.base, "conversation/plan.md")) == (422, "memory_scope_unavailable")
    assert code(api.write(room.ada, room.base, "conversation/new.md", "z")) == (422, "memory_scope_unavailable")
    assert api.grep(room.ada, room.base, ".").json()["matches"] == []


def test_explicit_null_restores_the_default_roots(room: Room) -> None:
    # Given a conversation whose roots were all disabled
    room.api.write(room.ada, room.base, "conversation/plan.md", "x")
    assert room.configure({"bindings": []}).status_code == 200
    # When null is sent
    r = room.configure(None)
    # Then the default roots are back (agent/ and speaker/ have no row on a Human-answered conversation)
    assert r.status_code == 200, r.text
    conv = r.json()["conversation"]
    assert conv["memory_context"] is None
    assert [b["name"] for b in conv["effective_memory_context"]["bindings"]] == ["conversation", "workspace"]
    assert room.listed() == ["conversation/plan.md"]


def test_every_change_bumps_context_revision_and_a_refusal_bumps_nothing(room: Room) -> None:
    # Given a fresh conversation at revision 0
    assert room.revision() == 0
    # When its configuration is replaced three times
    assert room.configure(bindings(CONV, USER)).json()["conversation"]["context_revision"] == 1
    assert room.configure({"bindings": []}).json()["conversation"]["context_revision"] == 2
    assert room.configure(None).json()["conversation"]["context_revision"] == 3
    # Then each moved the revision by one, and a refused change moved nothing
    assert code(room.configure(bindings(WORKSPACE))) == (422, "validation_failed")
    assert room.revision() == 3


def test_the_configuration_may_be_supplied_at_creation(room: Room) -> None:
    api = room.api
    conv = api.conversation(room.ada, room.ws, memory_context=bindings(CONV, USER))
    shown = api.show_conversation(room.ada, room.ws, conv)
    assert shown["memory_context"] == bindings(CONV, USER)
    assert shown["context_revision"] == 0
    r = api.post(f"/workspaces/{room.ws}/conversations", room.ada, {"conversation": {"memory_context": bindings(USER)}})
    assert code(r) == (422, "validation_failed")


# ---- the grammar ------------------------------------------------------------------------------------

GRAMMAR_BREAKS: dict[str, Any] = {
    "not an object": "conversation",
    "bindings not a list": {"bindings": CONV},
    "extra top-level field": {"bindings": [CONV], "limit": 1},
    "binding not an object": bindings(CONV, "workspace"),  # type: ignore[arg-type]
    "unknown binding field": bindings(CONV, {**WORKSPACE, "path": "x"}),
    "name with a capital": bindings(CONV, {**USER, "name": "Me"}),
    "name starting with a digit": bindings(CONV, {**USER, "name": "1me"}),
    "name with a slash": bindings(CONV, {**USER, "name": "me/you"}),
    "name of 33 characters": bindings(CONV, {**USER, "name": "m" * 33}),
    "name missing": bindings(CONV, {"scope": "user", "access": "read"}),
    "unknown scope": bindings(CONV, {"name": "team", "scope": "team", "access": "read"}),
    "unknown access word": bindings(CONV, {**WORKSPACE, "access": "write"}),
    "reserved name on another scope": bindings(CONV, {"name": "workspace", "scope": "user", "access": "read"}),
    "reserved name user on agent scope": bindings(CONV, {"name": "user", "scope": "agent", "access": "read"}),
    "duplicate names": bindings(CONV, WORKSPACE, {**USER, "name": "workspace"}),
    "seventeen bindings": bindings(
        CONV, *({"name": f"w{i}", "scope": "workspace", "access": "read"} for i in range(16))
    ),
    "no conversation root": bindings(WORKSPACE),
    "conversation root read through another name only": bindings(alias(UUID, name="here")),
    "conversation root naming a UUID": bindings({**CONV, "conversation_public_id": UUID}),
    "alias that is not a UUID": bindings(CONV, alias("group-chat")),
    "conversation_public_id on a workspace binding": bindings(CONV, {**WORKSPACE, "conversation_public_id": UUID}),
    "speaker_public_id on a user binding": bindings(CONV, {**USER, "speaker_public_id": UUID}),
    "speaker_public_id that is not a UUID": bindings(CONV, {**SPEAKER, "speaker_public_id": "sam"}),
}


@pytest.mark.parametrize("value", list(GRAMMAR_BREAKS.values()), ids=list(GRAMMAR_BREAKS))
def test_a_binding_outside_the_grammar_is_validation_failed(room: Room, value: Any) -> None:
    # When the configuration breaks one rule of the grammar
    r = room.configure(value)
    # Then it is refused as a whole and nothing changed
    assert code(r) == (422, "validation_failed"), r.text
    assert room.revision() == 0


def test_sixteen_bindings_and_differently_named_scopes_are_accepted(room: Room) -> None:
    many = [CONV, *({"name": f"w{i}", "scope": "workspace", "access": "read"} for i in range(15))]
    r = room.configure({"bindings": many})
    assert r.status_code == 200, r.text
    assert len(r.json()["conversation"]["effective_memory_context"]["bindings"]) == 16


# ---- aliases ----------------------------------------------------------------------------------------


def test_an_alias_reads_and_writes_the_other_conversation_under_its_own_path(room: Room) -> None:
    # Given another conversation of the room with a plan, aliased read_write as group/
    api, ada = room.api, room.ada
    other = api.conversation(ada, room.ws)
    other_base = conv_base(room.ws, other)
    original = api.write(ada, other_base, "conversation/plan.md", "deadline friday")
    r = room.configure(bindings(CONV, alias(other, "read_write")))
    assert r.status_code == 200, r.text
    # When the host conversation lists, greps, shows, edits and writes through group/
    assert room.listed() == ["group/plan.md"]
    assert api.grep(ada, room.base, "deadline").json()["matches"] == [
        {"path": "group/plan.md", "line_number": 1, "text": "deadline friday"}
    ]
    assert api.grep(ada, room.base, "deadline", path="group/plan.md").json()["matches"][0]["path"] == "group/plan.md"
    shown = api.show(ada, room.base, "group/plan.md")
    assert shown.json()["memory"]["path"] == "group/plan.md"
    assert pair(shown) == pair(original)
    edited = api.edit(ada, room.base, "group/plan.md", "friday", "monday", pair(shown))
    assert edited.status_code == 200, edited.text
    assert edited.json()["memory"]["path"] == "group/plan.md"
    written = api.write(ada, room.base, "group/notes.md", "bring snacks")
    assert written.status_code == 201, written.text
    assert written.json()["memory"]["path"] == "group/notes.md"
    # Then the rows are the other conversation's own, seen there under conversation/
    there = api.show(ada, other_base, "conversation/plan.md").json()["memory"]
    assert there["content"] == "deadline monday"
    assert there["public_id"] == pair(original)[0]
    assert [m["path"] for m in api.ls(ada, other_base).json()["memory"]] == [
        "conversation/notes.md",
        "conversation/plan.md",
    ]
    assert api.delete(ada, room.base, "group/notes.md", pair(written)).status_code == 204
    assert code(api.show(ada, other_base, "conversation/notes.md")) == (404, "memory_not_found")


def test_a_read_alias_refuses_every_change(room: Room) -> None:
    # Given another conversation's plan aliased read-only
    api, ada = room.api, room.ada
    other = api.conversation(ada, room.ws)
    original = pair(api.write(ada, conv_base(room.ws, other), "conversation/plan.md", "deadline friday"))
    assert room.configure(bindings(CONV, alias(other))).status_code == 200
    # When the host writes, edits or deletes through it
    # Then each is memory_read_only and the row is unchanged
    assert code(api.write(ada, room.base, "group/plan.md", "x", original)) == (403, "memory_read_only")
    assert code(api.write(ada, room.base, "group/new.md", "x")) == (403, "memory_read_only")
    assert code(api.edit(ada, room.base, "group/plan.md", "friday", "monday", original)) == (403, "memory_read_only")
    assert code(api.delete(ada, room.base, "group/plan.md", original)) == (403, "memory_read_only")
    assert pair(api.show(ada, room.base, "group/plan.md")) == original


def test_an_alias_outside_reach_is_memory_scope_unavailable(room: Room) -> None:
    # Given a conversation in another workspace of the account, one in another account, and a UUID of none
    api, ada = room.api, room.ada
    ws2 = api.workspace(ada, "elsewhere")
    elsewhere = api.conversation(ada, ws2)
    eve = api.account("other", "eve")
    foreign = api.conversation(eve, api.workspace(eve))
    # When the host aliases any of them
    # Then the source is unavailable and nothing changed
    for target in (elsewhere, foreign, UUID):
        assert code(room.configure(bindings(CONV, alias(target)))) == (422, "memory_scope_unavailable")
    assert room.revision() == 0


def test_an_alias_of_a_conversation_the_caller_cannot_see_is_unavailable(room: Room) -> None:
    # Given a program answering a conversation in a room it is not a member of, and another conversation
    api, ada = room.api, room.ada
    bot = api.agent(ada)
    host = api.conversation(ada, room.ws, answering_agent_public_id=bot.public_id)
    other = api.conversation(ada, room.ws)
    # When the program aliases the other conversation
    r = room.configure(bindings(CONV, alias(other)), who=bot, conv=host)
    # Then it cannot reach it: the source is not visible to it
    assert code(r) == (422, "memory_scope_unavailable")


# ---- speaker subjects -------------------------------------------------------------------------------


def test_a_speaker_binding_selects_the_subject(room: Room) -> None:
    # Given a program with a speaker, answering a conversation that binds speaker/ to that speaker
    api, ada = room.api, room.ada
    bot = api.agent(ada)
    sam = api.speaker(ada, bot, "sam")
    conv = api.conversation(ada, room.ws, answering_agent_public_id=bot.public_id)
    r = room.configure(bindings(CONV, {**SPEAKER, "speaker_public_id": sam}), conv=conv)
    assert r.status_code == 200, r.text
    # When the agent writes speaker/ with no per-request selector
    written = api.write(bot, conv_base(room.ws, conv), "speaker/prefs.md", "likes tea")
    assert written.status_code == 201, written.text
    # Then it is the (agent, Sam) row: the same one a per-request selection of Sam reaches elsewhere
    plain = api.conversation(ada, room.ws, answering_agent_public_id=bot.public_id)
    shown = api.show(bot, conv_base(room.ws, plain), "speaker/prefs.md", speaker_public_id=sam)
    assert pair(shown) == pair(written)
    effective = r.json()["conversation"]["effective_memory_context"]["bindings"]
    speaker = next(b for b in effective if b["scope"] == "speaker")
    assert speaker["agent_public_id"] == bot.public_id
    assert speaker["speaker_public_id"] == sam


def test_a_speaker_binding_naming_no_speaker_of_the_account_is_unavailable(room: Room) -> None:
    api, ada = room.api, room.ada
    bot = api.agent(ada)
    conv = api.conversation(ada, room.ws, answering_agent_public_id=bot.public_id)
    eve = api.account("other", "eve")
    foreign = api.speaker(eve, api.agent(eve))
    for subject in (UUID, foreign):
        r = room.configure(bindings(CONV, {**SPEAKER, "speaker_public_id": subject}), conv=conv)
        assert code(r) == (422, "memory_scope_unavailable")


# ---- the response -----------------------------------------------------------------------------------


def test_the_response_is_the_full_conversation_with_resolved_anchors(room: Room) -> None:
    # Given a program with a speaker answering a conversation, and another conversation to alias
    api, ada = room.api, room.ada
    bot = api.agent(ada)
    sam = api.speaker(ada, bot, "sam")
    conv = api.conversation(ada, room.ws, answering_agent_public_id=bot.public_id)
    other = api.conversation(ada, room.ws)
    value = bindings(CONV, alias(other), WORKSPACE, USER, AGENT, {**SPEAKER, "speaker_public_id": sam})
    # When the steward binds every scope
    r = room.configure(value, conv=conv)
    # Then the answer is the whole conversation, with the stored and the resolved configuration
    assert r.status_code == 200, r.text
    body = r.json()["conversation"]
    assert body["public_id"] == conv
    assert body["workspace_public_id"] == room.ws
    assert body["answering_agent_public_id"] == bot.public_id
    assert body["context_revision"] == 1
    assert body["memory_context"] == value
    anchors = {b["name"]: b["anchor_public_id"] for b in body["effective_memory_context"]["bindings"]}
    assert anchors == {
        "conversation": conv,
        "group": other,
        "workspace": room.ws,
        "user": ada.public_id,
        "agent": bot.public_id,
        "speaker": sam,
    }
    speaker = body["effective_memory_context"]["bindings"][-1]
    assert speaker == {**SPEAKER, "speaker_public_id": sam, "agent_public_id": bot.public_id, "anchor_public_id": sam}
    # And every later read of the conversation carries the same fields
    assert api.show_conversation(ada, room.ws, conv) == body


# ---- standing -----------------------------------------------------------------------------------------


def test_configuration_needs_write_standing_on_the_host(room: Room) -> None:
    # Given a viewer of the room, and a Human of the account who is no member
    api, ada = room.api, room.ada
    vic, ozzy = api.human(ada, "vic"), api.human(ada, "ozzy")
    api.member(ada, room.ws, vic, role="viewer")
    # When either replaces the configuration
    # Then the viewer is not_authorized and the stranger does not see the conversation at all
    assert code(room.configure(None, who=vic)) == (403, "not_authorized")
    assert code(room.configure(None, who=ozzy)) == (404, "not_found")
    assert room.revision() == 0


def test_a_read_write_alias_needs_write_standing_on_its_source(room: Room) -> None:
    # Given a program that is only a viewer of the room but answers (so writes) one conversation
    api, ada = room.api, room.ada
    bot = api.agent(ada)
    api.member(ada, room.ws, bot, role="viewer")
    host = api.conversation(ada, room.ws, answering_agent_public_id=bot.public_id)
    other = api.conversation(ada, room.ws)
    # When it aliases another conversation of the room, which it may only read
    # Then read_write is not_authorized while read is accepted
    assert code(room.configure(bindings(CONV, alias(other, "read_write")), who=bot, conv=host)) == (
        403,
        "not_authorized",
    )
    r = room.configure(bindings(CONV, alias(other)), who=bot, conv=host)
    assert r.status_code == 200, r.text


def test_an_archived_conversation_refuses_a_new_configuration(room: Room) -> None:
    api = room.api
    assert api.post(f"/workspaces/{room.ws}/conversations/{room.conv}/archive", room.ada).status_code == 200
    assert code(room.configure(None)) == (409, "conversation_archived")
