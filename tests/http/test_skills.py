"""Skills over HTTP: the write rules of skills/ rows, the catalog a conversation's model sees and loading one."""

from __future__ import annotations

import pytest
import requests

from ..support import AGENT, CONV, WORKSPACE, Api, alias, bindings, code, pair
from .five_scopes import Five, make_five


@pytest.fixture
def five(api: Api) -> Five:
    return make_five(api)


def names(r: requests.Response) -> dict[str, str]:
    """name -> path of a catalog response."""
    assert r.status_code == 200, r.text
    return {s["name"]: s["path"] for s in r.json()["skills"]}


# ---- writing skills --------------------------------------------------------------------------------


def test_a_skill_row_carries_its_description_through_write_show_and_list(five: Five) -> None:
    # Given a skill written with a description
    r = five.skill("workspace/skills/pdf-forms", "# Filling PDF forms\n", "Fill PDF forms field by field")

    # Then the write, show and listing all report it, and the description survives an edit
    assert r.status_code == 201, r.text
    assert r.json()["memory"]["description"] == "Fill PDF forms field by field"
    shown = five.api.show(five.ada, five.base, "workspace/skills/pdf-forms").json()["memory"]
    assert (shown["description"], shown["content"]) == ("Fill PDF forms field by field", "# Filling PDF forms\n")
    assert [(m["path"], m["description"]) for m in five.listing()] == [
        ("workspace/skills/pdf-forms", "Fill PDF forms field by field")
    ]
    edited = five.api.edit(five.ada, five.base, "workspace/skills/pdf-forms", "Filling", "Completing", pair(r))
    assert edited.status_code == 200, edited.text
    assert edited.json()["memory"]["description"] == "Fill PDF forms field by field"


@pytest.mark.parametrize("root", ["workspace", "agent", "speaker", "user"])
def test_each_skill_scope_accepts_a_skill(five: Five, root: str) -> None:
    # When a skill is written under each scope that can hold one
    r = five.skill(f"{root}/skills/triage", "steps", "How to triage")
    # Then it is created
    assert r.status_code == 201, r.text
    assert r.json()["memory"]["path"] == f"{root}/skills/triage"


@pytest.mark.parametrize(
    "path",
    [
        "workspace/skills/",
        "workspace/skills",
        "workspace/skills/a/b",
        "workspace/skills/PDF",
        "workspace/skills/pdf_forms",
        "workspace/skills/pdf--forms",
        "workspace/skills/-pdf",
        "workspace/skills/pdf-",
        "workspace/skills/pdf.md",
        "workspace/skills/pdf\n",
        "agent/skills/" + "a" * 65,
        "user/skills/Ünïcode",
    ],
)
def test_a_skills_path_outside_the_skill_grammar_is_skill_name_invalid(five: Five, path: str) -> None:
    # When a skill is written at a path whose remainder is not a skill name
    r = five.skill(path, "body", "a description")
    # Then it is refused with the skill code, on reads as on writes, and nothing is written
    assert code(r) == (422, "skill_name_invalid"), r.text
    assert code(five.api.show(five.ada, five.base, path)) == (422, "skill_name_invalid")
    assert five.listing() == []
    assert five.revision() == 0


def test_the_longest_skill_name_is_accepted(five: Five) -> None:
    r = five.skill("agent/skills/" + "a" * 64, "body", "long name")
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("description", [None, "", "   \n\t"])
def test_a_skill_without_a_real_description_is_skill_description_required(five: Five, description: object) -> None:
    # When a skill is written with no description, a null one, or a blank one
    body = {
        "path": "workspace/skills/pdf",
        "content": "body",
        "expected_public_id": None,
        "expected_lock_version": None,
        "description": description,
    }
    r = five.api.post(five.base, five.ada, {"memory": body})
    # Then it is refused and nothing is written
    assert code(r) == (422, "skill_description_required"), r.text
    assert five.listing() == []


def test_a_skill_with_the_description_field_missing_is_skill_description_required(five: Five) -> None:
    r = five.api.write(five.ada, five.base, "workspace/skills/pdf", "body")
    assert code(r) == (422, "skill_description_required"), r.text


@pytest.mark.parametrize("description", [7, ["a list"], {"an": "object"}, True])
def test_a_description_that_is_not_a_string_is_memory_description_invalid(five: Five, description: object) -> None:
    r = five.skill("workspace/skills/pdf", "body", description)  # type: ignore[arg-type]
    assert code(r) == (422, "memory_description_invalid"), r.text
    assert five.listing() == []


def test_a_description_over_1024_bytes_is_memory_description_invalid(five: Five) -> None:
    # Given descriptions of exactly 1024 bytes and of 1025 bytes (two-byte characters count as two)
    exactly = "é" * 512
    over = "é" * 512 + "x"
    assert len(exactly.encode()) == 1024 and len(over.encode()) == 1025
    # When both are written
    ok = five.skill("workspace/skills/fits", "body", exactly)
    refused = five.skill("workspace/skills/too-long", "body", over)
    # Then the bound is in bytes: the first is accepted, the second refused and absent
    assert ok.status_code == 201, ok.text
    assert code(refused) == (422, "memory_description_invalid"), refused.text
    assert [m["path"] for m in five.listing()] == ["workspace/skills/fits"]


@pytest.mark.parametrize("path", ["conversation/plan.md", "workspace/notes.md", "user/prefs.md", "agent/notes.md"])
def test_a_description_outside_skills_is_memory_description_invalid(five: Five, path: str) -> None:
    # When a plain document is written with a description
    r = five.skill(path, "body", "not a skill")
    # Then it is refused, and without one (or with null) the same write is accepted
    assert code(r) == (422, "memory_description_invalid"), r.text
    assert five.listing() == []
    plain = five.api.write(five.ada, five.base, path, "body", description=None)
    assert plain.status_code == 201, plain.text
    assert plain.json()["memory"]["description"] is None


@pytest.mark.parametrize("path", ["conversation/skills/pdf", "conversation/skills/a/b"])
def test_a_conversation_skill_is_skill_scope_unavailable(five: Five, path: str) -> None:
    # When a skill is written under conversation/
    r = five.skill(path, "body", "per-conversation skill")
    # Then it is refused (a bad name under conversation/ is named as a bad name first)
    expected = "skill_scope_unavailable" if path.endswith("/pdf") else "skill_name_invalid"
    assert code(r) == (422, expected), r.text
    assert five.listing() == []
    assert five.revision() == 0


def test_an_alias_of_another_conversation_cannot_hold_skills_either(five: Five) -> None:
    # Given a conversation binding 'group' to another conversation of the room
    other = five.conversation()
    five.configure(bindings(CONV, alias(other, "read_write")))
    # When a skill is written through the alias, or edited and deleted there
    write = five.skill("group/skills/pdf", "body", "shared skill")
    edit = five.api.edit(five.ada, five.base, "group/skills/pdf", "a", "b", ("01900000-0000-7000-8000-000000000001", 0))
    delete = five.api.delete(five.ada, five.base, "group/skills/pdf", ("01900000-0000-7000-8000-000000000001", 0))
    # Then each is refused: the alias is a conversation scope
    assert {code(write), code(edit), code(delete)} == {(422, "skill_scope_unavailable")}


def test_the_workspace_door_writes_the_rooms_skills(five: Five) -> None:
    # When the room's skill is written through the workspace's own door
    r = five.skill("workspace/skills/onboarding", "welcome", "Onboard a newcomer", base=five.ws_base)
    # Then every conversation of the room sees it in its catalog
    assert r.status_code == 201, r.text
    assert names(five.skills()) == {"onboarding": "workspace/skills/onboarding"}
    assert names(five.skills(conv=five.conversation(agent=False))) == {"onboarding": "workspace/skills/onboarding"}


# ---- the catalog and loading -----------------------------------------------------------------------


def test_the_catalog_resolves_each_name_to_its_first_source(five: Five) -> None:
    # Given 'pdf' in all four skill scopes and other names in only some of them
    for root in ("user", "speaker", "workspace", "agent"):
        assert five.skill(f"{root}/skills/pdf", f"{root} pdf body", f"{root}'s pdf").status_code == 201
    assert five.skill("user/skills/taxes", "u", "user taxes").status_code == 201
    assert five.skill("speaker/skills/taxes", "s", "speaker taxes").status_code == 201
    assert five.skill("user/skills/cooking", "c", "user cooking").status_code == 201
    assert five.skill("workspace/skills/deploy", "d", "room deploy").status_code == 201
    assert five.skill("speaker/skills/deploy", "d", "speaker deploy").status_code == 201
    # And plain documents that are not skills
    assert five.api.write(five.ada, five.base, "workspace/notes.md", "n").status_code == 201

    # When the catalog is read
    r = five.skills()

    # Then each name appears once, from agent/, then workspace/, then speaker/, then user/, ordered by name
    assert r.status_code == 200, r.text
    assert r.json()["skills"] == [
        {"name": "cooking", "description": "user cooking", "path": "user/skills/cooking"},
        {"name": "deploy", "description": "room deploy", "path": "workspace/skills/deploy"},
        {"name": "pdf", "description": "agent's pdf", "path": "agent/skills/pdf"},
        {"name": "taxes", "description": "speaker taxes", "path": "speaker/skills/taxes"},
    ]


def test_loading_returns_the_winning_body_and_falls_through_when_it_goes(five: Five) -> None:
    # Given 'pdf' in agent/ and workspace/
    agent_row = five.skill("agent/skills/pdf", "agent body", "agent pdf")
    assert five.skill("workspace/skills/pdf", "room body", "room pdf").status_code == 201

    # When it is loaded, the agent's own wins
    r = five.load("pdf")
    assert r.status_code == 200, r.text
    assert r.json()["skill"] == {
        "name": "pdf",
        "description": "agent pdf",
        "path": "agent/skills/pdf",
        "content": "agent body",
    }

    # And once the agent's row is deleted, the room's is what loads and what the catalog names
    assert five.api.delete(five.ada, five.base, "agent/skills/pdf", pair(agent_row)).status_code == 204
    r = five.load("pdf")
    assert r.json()["skill"]["content"] == "room body"
    assert names(five.skills()) == {"pdf": "workspace/skills/pdf"}


def test_loading_an_unknown_skill_is_memory_not_found(five: Five) -> None:
    assert five.skill("workspace/skills/pdf", "body", "pdf").status_code == 201
    assert code(five.load("docx")) == (404, "memory_not_found")


@pytest.mark.parametrize("name", ["PDF", "a/b", "", "pdf--x", "x" * 65, "pdf\n"])
def test_loading_a_bad_name_is_skill_name_invalid(five: Five, name: str) -> None:
    assert code(five.load(name)) == (422, "skill_name_invalid")


def test_loading_needs_a_string_name(five: Five) -> None:
    url = f"{five.conv_url}/skills/load"
    assert code(five.load(12)) == (400, "parameter_invalid")
    assert code(five.api.post(url, five.ada, {"skill": {}})) == (400, "parameter_missing")
    assert code(five.api.post(url, five.ada, {})) == (400, "parameter_missing")


def test_a_root_outside_the_bindings_contributes_nothing(five: Five) -> None:
    # Given skills in agent/ and workspace/
    assert five.skill("agent/skills/pdf", "agent body", "agent pdf").status_code == 201
    assert five.skill("workspace/skills/deploy", "room body", "room deploy").status_code == 201
    # And a conversation of the same agent that binds conversation/ and workspace/ only
    narrow = five.conversation(bindings(CONV, {**WORKSPACE, "access": "read"}))

    # When its catalog is read and the agent's skill is loaded there
    catalog = names(five.skills(conv=narrow))
    load = five.load("pdf", conv=narrow)

    # Then the agent's skill is neither listed nor loadable, while the room's still is
    assert catalog == {"deploy": "workspace/skills/deploy"}
    assert code(load) == (404, "memory_not_found")
    assert five.load("deploy", conv=narrow).json()["skill"]["content"] == "room body"


def test_a_profile_limit_that_drops_a_root_drops_its_skills(api: Api) -> None:
    # Given an agent whose profile limit allows conversation/ and agent/ but not workspace/
    ada = api.account()
    ws = api.workspace(ada)
    limited = api.agent(ada, "limited", limit=bindings(CONV, AGENT))
    conv = api.conversation(ada, ws, answering_agent_public_id=limited.public_id)
    base = f"/workspaces/{ws}/conversations/{conv}"
    # And the room holds a skill (written through the workspace's own door) and the agent one of its own
    room = api.write(ada, f"/workspaces/{ws}/memory", "workspace/skills/deploy", "d", description="d")
    assert room.status_code == 201
    assert api.write(ada, f"{base}/memory", "agent/skills/pdf", "p", description="p").status_code == 201

    # When the conversation's catalog is read
    r = api.get(f"{base}/skills", ada)

    # Then only the agent's skill is there, and the room's does not load
    assert r.status_code == 200, r.text
    assert [s["path"] for s in r.json()["skills"]] == ["agent/skills/pdf"]
    assert code(api.post(f"{base}/skills/load", ada, {"skill": {"name": "deploy"}})) == (404, "memory_not_found")


def test_user_skills_need_an_explicit_user_binding(five: Five) -> None:
    # Given a skill in Ada's user/ scope, written through her own profile door
    r = five.skill("user/skills/journal", "write daily", "Keep a journal", base="/profile/memory")
    assert r.status_code == 201, r.text
    # When catalogs are read in a conversation with the default roots and in one binding user/
    default = five.conversation()
    # Then only the explicit binding makes it a source
    assert names(five.skills(conv=default)) == {}
    assert code(five.load("journal", conv=default)) == (404, "memory_not_found")
    assert names(five.skills()) == {"journal": "user/skills/journal"}


def test_the_answering_agent_sees_no_user_skills(five: Five) -> None:
    # Given skills in user/ and agent/
    assert five.skill("user/skills/journal", "j", "journal").status_code == 201
    assert five.skill("agent/skills/pdf", "p", "pdf").status_code == 201
    # When the answering agent itself reads the catalog (user/ belongs to a Human caller, never an agent)
    catalog = names(five.skills(who=five.helper))
    # Then it sees its own skill and not the person's
    assert catalog == {"pdf": "agent/skills/pdf"}
    assert code(five.load("journal", who=five.helper)) == (404, "memory_not_found")


def test_another_member_sees_the_rooms_skills_but_not_the_agents(five: Five) -> None:
    # Given a viewer in the room, and skills in workspace/ and agent/
    bob = five.api.human(five.ada, "bob")
    five.api.member(five.ada, five.ws, bob, role="viewer")
    assert five.skill("workspace/skills/deploy", "d", "deploy").status_code == 201
    assert five.skill("agent/skills/pdf", "p", "pdf").status_code == 201
    # When the viewer reads the catalog and loads
    # Then the room's skill is served to a read-only caller and the agent's private one is not
    assert names(five.skills(who=bob)) == {"deploy": "workspace/skills/deploy"}
    assert five.load("deploy", who=bob).json()["skill"]["content"] == "d"
    assert code(five.load("pdf", who=bob)) == (404, "memory_not_found")


def test_the_speaker_selector_picks_whose_speaker_skills_apply(api: Api) -> None:
    # Given an agent with two speakers, each with a skill of the same name in its pair scope
    ada = api.account()
    ws = api.workspace(ada)
    helper = api.agent(ada)
    kim, lee = api.speaker(ada, helper, "kim"), api.speaker(ada, helper, "lee")
    conv = api.conversation(ada, ws, answering_agent_public_id=helper.public_id)
    base = f"/workspaces/{ws}/conversations/{conv}"
    for who, sp in (("kim", kim), ("lee", lee)):
        r = api.write(
            helper, f"{base}/memory", "speaker/skills/greet", f"greet {who}", description=who, speaker_public_id=sp
        )
        assert r.status_code == 201, r.text

    # When the agent reads its catalog with and without a selected speaker
    plain = api.get(f"{base}/skills", helper).json()["skills"]
    for_kim = api.get(f"{base}/skills", helper, params={"skill[speaker_public_id]": kim}).json()["skills"]
    load_lee = api.post(f"{base}/skills/load", helper, {"skill": {"name": "greet", "speaker_public_id": lee}})

    # Then no subject means no speaker skills, and each subject sees its own
    assert plain == []
    assert for_kim == [{"name": "greet", "description": "kim", "path": "speaker/skills/greet"}]
    assert load_lee.json()["skill"]["content"] == "greet lee"


def test_the_catalog_is_not_found_for_a_stranger(five: Five, api: Api) -> None:
    stranger = api.account("other", "eve")
    assert code(five.skills(who=stranger)) == (404, "not_found")
    assert code(five.load("pdf", who=stranger)) == (404, "not_found")
    assert code(api.get(f"{five.conv_url}/skills")) == (401, "not_authenticated")
