"""A provider override of nexus.memory: the workspace's memory routes refuse, skills stay served, rows wait."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from ..support import Api, code, pair
from .five_scopes import SCOPE_WORDS, Five, make_five

PROVIDER = "acme-recall"
STALE_PAIR = ("01900000-0000-7000-8000-000000000001", 0)


@pytest.fixture
def five(api: Api) -> Five:
    return make_five(api)


def overridden(r: requests.Response) -> bool:
    """A memory_overridden refusal whose message names the provider."""
    return code(r) == (409, "memory_overridden") and PROVIDER in r.json()["error"]["message"]


def seeded(five: Five) -> dict[str, tuple[str, int]]:
    """One plain document per scope, and its (public_id, lock_version)."""
    out = {}
    for scope in SCOPE_WORDS:
        r = five.api.write(five.ada, five.base, f"{scope}/doc.md", f"{scope} before")
        assert r.status_code == 201, r.text
        out[scope] = pair(r)
    return out


# ---- the setting ----------------------------------------------------------------------------------


def test_patch_sets_and_null_clears_the_override(five: Five) -> None:
    # When the override is set, the workspace says so; other providers' keys are kept when it is cleared
    r = five.set_override(PROVIDER)
    assert r.status_code == 200, r.text
    assert r.json()["workspace"]["tool_provider_overrides"] == {"nexus.memory": PROVIDER}
    other = five.api.call(
        "PATCH",
        f"/workspaces/{five.ws}",
        five.ada,
        {"workspace": {"tool_provider_overrides": {"nexus.search": "finder"}}},
    )
    assert other.json()["workspace"]["tool_provider_overrides"] == {"nexus.memory": PROVIDER, "nexus.search": "finder"}
    cleared = five.set_override(None)
    assert cleared.json()["workspace"]["tool_provider_overrides"] == {"nexus.search": "finder"}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, (400, "parameter_missing")),
        ({"workspace": {}}, (400, "parameter_missing")),
        ({"workspace": {"tool_provider_overrides": "acme"}}, (400, "parameter_invalid")),
        ({"workspace": {"tool_provider_overrides": {"nexus.memory": 7}}}, (400, "parameter_invalid")),
        ({"workspace": {"tool_provider_overrides": {"nexus.memory": "  "}}}, (400, "parameter_invalid")),
    ],
)
def test_a_malformed_override_is_refused(five: Five, body: dict[str, Any], expected: tuple[int, str]) -> None:
    r = five.api.call("PATCH", f"/workspaces/{five.ws}", five.ada, body)
    assert code(r) == expected
    assert five.api.ls(five.ada, five.base).status_code == 200


def test_only_a_member_with_write_standing_sets_it(five: Five, api: Api) -> None:
    bob = api.human(five.ada, "bob")
    api.member(five.ada, five.ws, bob, role="viewer")
    assert code(five.set_override(PROVIDER, who=bob)) == (403, "not_authorized")
    assert code(five.set_override(PROVIDER, who=api.account("other", "eve"))) == (404, "not_found")
    assert five.api.ls(five.ada, five.base).status_code == 200


# ---- while it is set ------------------------------------------------------------------------------


@pytest.mark.parametrize("scope", SCOPE_WORDS)
def test_every_verb_on_every_scope_is_memory_overridden(five: Five, scope: str) -> None:
    # Given a document in the scope, then the override
    seen = seeded(five)[scope]
    revision = five.revision()
    assert five.set_override(PROVIDER).status_code == 200
    path = f"{scope}/doc.md"

    # When each verb names a path in that scope
    api, ada, base = five.api, five.ada, five.base
    responses = {
        "show": api.show(ada, base, path),
        "write": api.write(ada, base, path, "changed", seen),
        "create": api.write(ada, base, f"{scope}/new.md", "new"),
        "edit": api.edit(ada, base, path, "before", "after", seen),
        "delete": api.delete(ada, base, path, seen),
        "grep": api.grep(ada, base, "before", path=f"{scope}/"),
    }

    # Then every one is refused naming the provider, and nothing moved
    assert {verb: overridden(r) for verb, r in responses.items()} == dict.fromkeys(responses, True)
    assert five.set_override(None).status_code == 200
    shown = api.show(ada, base, path).json()["memory"]
    assert (shown["content"], (shown["public_id"], shown["lock_version"])) == (f"{scope} before", seen)
    assert code(api.show(ada, base, f"{scope}/new.md")) == (404, "memory_not_found")
    assert five.revision() == revision


def test_the_answering_agent_is_refused_too(five: Five) -> None:
    seeded(five)
    assert five.set_override(PROVIDER).status_code == 200
    for scope in ("conversation", "workspace", "agent", "speaker"):
        assert overridden(five.api.show(five.helper, five.base, f"{scope}/doc.md")), scope
    assert overridden(five.api.ls(five.helper, five.base))


def test_the_listing_and_a_pathless_grep_are_refused(five: Five) -> None:
    seeded(five)
    assert five.set_override(PROVIDER).status_code == 200
    assert overridden(five.api.ls(five.ada, five.base))
    assert overridden(five.api.grep(five.ada, five.base, "before"))


def test_the_workspace_door_is_refused_but_serves_skills(five: Five) -> None:
    # Given a room document and the override
    created = five.api.write(five.ada, five.ws_base, "workspace/doc.md", "room")
    assert created.status_code == 201
    assert five.set_override(PROVIDER).status_code == 200
    # Then the workspace's own door refuses its documents and its listing
    assert overridden(five.api.ls(five.ada, five.ws_base))
    assert overridden(five.api.show(five.ada, five.ws_base, "workspace/doc.md"))
    assert overridden(five.api.write(five.ada, five.ws_base, "workspace/doc.md", "x", pair(created)))
    # While a skill of the room is still written and read there
    skill = five.api.write(five.ada, five.ws_base, "workspace/skills/deploy", "steps", description="Deploy")
    assert skill.status_code == 201, skill.text
    assert five.api.show(five.ada, five.ws_base, "workspace/skills/deploy").json()["memory"]["content"] == "steps"


@pytest.mark.parametrize("root", ["workspace", "agent", "speaker", "user"])
def test_skills_verbs_are_served_under_the_override(five: Five, root: str) -> None:
    # Given the override
    assert five.set_override(PROVIDER).status_code == 200
    api, ada, base, path = five.api, five.ada, five.base, f"{root}/skills/triage"
    revision = five.revision()

    # When a skill is written, shown, edited, searched and deleted through the conversation
    created = api.write(ada, base, path, "step one", description="How to triage")
    assert created.status_code == 201, created.text
    shown = api.show(ada, base, path)
    assert shown.json()["memory"]["content"] == "step one"
    edited = api.edit(ada, base, path, "one", "two", pair(created))
    assert edited.status_code == 200, edited.text
    found = api.grep(ada, base, "step", path=f"{root}/skills/")
    assert found.status_code == 200, found.text
    assert found.json()["matches"] == [{"path": path, "line_number": 1, "text": "step two"}]
    assert api.delete(ada, base, path, pair(edited)).status_code == 204

    # Then each was served and moved the revision as any write does
    assert five.revision() == revision + 3


def test_skill_refusals_keep_their_own_codes_under_the_override(five: Five) -> None:
    assert five.set_override(PROVIDER).status_code == 200
    assert code(five.api.write(five.ada, five.base, "conversation/skills/pdf", "x", description="d")) == (
        422,
        "skill_scope_unavailable",
    )
    assert code(five.api.write(five.ada, five.base, "workspace/skills/PDF", "x", description="d")) == (
        422,
        "skill_name_invalid",
    )
    assert code(five.api.write(five.ada, five.base, "workspace/skills/pdf", "x")) == (422, "skill_description_required")


def test_the_skills_catalog_and_load_are_served_under_the_override(five: Five) -> None:
    assert five.api.write(five.ada, five.base, "agent/skills/pdf", "agent pdf", description="pdf").status_code == 201
    assert five.set_override(PROVIDER).status_code == 200
    catalog = five.skills()
    assert catalog.status_code == 200, catalog.text
    assert catalog.json()["skills"] == [{"name": "pdf", "description": "pdf", "path": "agent/skills/pdf"}]
    assert five.load("pdf").json()["skill"]["content"] == "agent pdf"


def test_the_block_renders_nothing_and_says_who_provides_memory(five: Five) -> None:
    # Given documents in every scope, then the override
    seeded(five)
    before = five.block().json()["memory_block"]
    assert len(before["included"]) == 5
    assert five.set_override(PROVIDER).status_code == 200

    # When the block is assembled, even at the current expected revision
    r = five.block(expected_context_revision=5)

    # Then it is empty and names the provider
    assert r.status_code == 200, r.text
    assert r.json()["memory_block"] == {
        "context_revision": 5,
        "budget_bytes": 16384,
        "used_bytes": 0,
        "text": "",
        "included": [],
        "omitted": [],
        "overridden_by": PROVIDER,
    }
    # And a stale expectation is still refused as stale
    assert code(five.block(expected_context_revision=4)) == (409, "stale_object")


def test_profile_memory_keeps_serving_user_rows(five: Five) -> None:
    # Given a user/ document, then the override on the workspace
    seen = seeded(five)["user"]
    assert five.set_override(PROVIDER).status_code == 200
    # Then the person's own door lists, shows, edits and writes user/ as ever
    profile = "/profile/memory"
    assert [m["path"] for m in five.listing(base=profile)] == ["user/doc.md"]
    assert five.api.show(five.ada, profile, "user/doc.md").json()["memory"]["content"] == "user before"
    edited = five.api.edit(five.ada, profile, "user/doc.md", "before", "after", seen)
    assert edited.status_code == 200, edited.text
    assert five.api.write(five.ada, profile, "user/more.md", "more").status_code == 201
    # While the conversation door still refuses the same rows
    assert overridden(five.api.show(five.ada, five.base, "user/doc.md"))


def test_a_named_definitions_door_is_not_a_workspaces(five: Five, api: Api) -> None:
    api.agent(five.ada, "scribe", kind="definition")
    assert five.set_override(PROVIDER).status_code == 200
    r = api.write(five.ada, "/profile/agents/scribe/memory", "agent/notes.md", "definition notes")
    assert r.status_code == 201, r.text


def test_the_binding_configuration_is_refused_too(five: Five) -> None:
    # The bindings route is one of the conversation door's routes, so the provider owns it as well
    before = five.api.show_conversation(five.ada, five.ws, five.conv)
    assert five.set_override(PROVIDER).status_code == 200
    r = five.configure({"bindings": []})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "memory_overridden"), r.text
    assert PROVIDER in r.json()["error"]["message"]
    after = five.api.show_conversation(five.ada, five.ws, five.conv)
    assert after["memory_context"] == before["memory_context"]
    assert after["context_revision"] == before["context_revision"]


def test_another_workspace_is_unaffected(five: Five, api: Api) -> None:
    other_ws = api.workspace(five.ada, "elsewhere")
    other_conv = api.conversation(five.ada, other_ws)
    assert five.set_override(PROVIDER).status_code == 200
    r = api.write(five.ada, f"/workspaces/{other_ws}/conversations/{other_conv}/memory", "conversation/a.md", "a")
    assert r.status_code == 201, r.text


# ---- when it clears -------------------------------------------------------------------------------


def test_rows_wait_untouched_and_reappear_when_the_override_clears(five: Five) -> None:
    # Given documents in every scope, a skill, their listing and block, and the revision
    seeded(five)
    assert five.api.write(five.ada, five.base, "workspace/skills/pdf", "s", description="pdf").status_code == 201
    listing, block_before, revision = five.listing(), five.block().json()["memory_block"], five.revision()

    # When the override is set, refused calls are made, and it is cleared again
    assert five.set_override(PROVIDER).status_code == 200
    assert overridden(five.api.ls(five.ada, five.base))
    assert overridden(five.api.write(five.ada, five.base, "conversation/doc.md", "lost", STALE_PAIR))
    assert five.block().json()["memory_block"]["included"] == []
    assert five.set_override(None).status_code == 200

    # Then the listing, the block and the revision are exactly as before
    assert five.listing() == listing
    assert five.block().json()["memory_block"] == block_before
    assert five.revision() == revision
