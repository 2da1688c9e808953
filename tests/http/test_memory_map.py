"""The memory map: which Memories reach which agents (attachments, tenant defaults), where promoted ones came
from, and the orphans nothing reaches; as JSON and as one self-contained page."""

from __future__ import annotations

from typing import Any

import pytest

from ..support import Api, Who
from .orgmem import Memories

pytestmark = pytest.mark.http


def _graph(api: Api, who: Who) -> dict[str, Any]:
    r = api.get("/memory_map", who)
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def build(api: Api) -> tuple[Who, dict[str, str], dict[str, str]]:
    """An account with a Memory attached to an agent, an account-wide default, a deployment default, a
    Memory promoted from another, and an orphan."""
    ada = api.account()
    mems = Memories(api)
    ids = {
        name: mems.made(ada, name, files=[{"path": "a.md", "content": f"{name}\n"}])["memory_id"]
        for name in ("runbooks", "orphan")
    }
    ids["house"] = mems.made(ada, "house", default={"reach": "account", "mode": "readonly"})["memory_id"]
    ids["prod-notes"] = mems.made(
        ada, "prod-notes", default={"reach": "deployment", "deployment": "prod", "mode": "readwrite"}
    )["memory_id"]
    promoted = api.post(
        "/memories/promote",
        ada,
        {"promote": {"source": {"memory_id": ids["runbooks"], "path": "a.md", "lock_version": 0}, "name": "copy"}},
    )
    assert promoted.status_code == 201, promoted.text
    ids["copy"] = promoted.json()["memory"]["memory_id"]
    triage = api.agent(ada, "triage")
    attached = mems.attach(ada, triage.public_id, [{"memory_id": ids["runbooks"], "mode": "readwrite"}])
    assert attached.status_code == 200, attached.text
    return ada, ids, {"triage": triage.public_id}


def test_the_map_names_every_memory_what_it_reaches_and_the_orphans(api: Api) -> None:
    ada, ids, agents = build(api)
    graph = _graph(api, ada)
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert {nodes[i]["kind"] for i in ids.values()} == {"memory"}
    assert nodes[agents["triage"]] == {"id": agents["triage"], "kind": "agent", "name": "triage"}
    assert nodes["all_agents"]["kind"] == "all_agents"
    assert nodes["deployment:prod"] == {"id": "deployment:prod", "kind": "deployment", "name": "prod"}
    edges = {(e["from"], e["to"], e["kind"]): e for e in graph["edges"]}
    attachment = edges[(ids["runbooks"], agents["triage"], "attachment")]
    assert attachment["mode"] == "readwrite" and attachment["read_first"] is True
    assert edges[(ids["house"], "all_agents", "default")]["mode"] == "readonly"
    assert edges[(ids["prod-notes"], "deployment:prod", "default")]["mode"] == "readwrite"
    assert (ids["runbooks"], ids["copy"], "provenance") in edges
    assert "mode" not in edges[(ids["runbooks"], ids["copy"], "provenance")]
    # Only what nothing attaches or defaults is an orphan: the promoted copy too (provenance reaches no agent).
    assert sorted(graph["orphans"]) == sorted([ids["orphan"], ids["copy"]])


def test_the_map_shows_only_what_the_caller_sees(api: Api) -> None:
    ada, ids, _ = build(api)
    bob = api.human(ada, "bob")
    mems = Memories(api)
    restricted = mems.patch(ada, ids["orphan"], access={"humans": [ada.public_id]})
    assert restricted.status_code == 200, restricted.text
    seen = {n["id"] for n in _graph(api, bob)["nodes"]}
    assert ids["orphan"] not in seen and ids["runbooks"] in seen
    assert ids["orphan"] not in _graph(api, bob)["orphans"]
    # Another account's Human sees none of it.
    other = api.account("other", "eve")
    assert _graph(api, other) == {"nodes": [], "edges": [], "orphans": []}


def test_deleting_a_memory_takes_it_and_its_edges_off_the_map(api: Api) -> None:
    ada, ids, agents = build(api)
    r = api.post(f"/memories/{ids['runbooks']}/delete", ada)
    assert r.status_code == 204, r.text
    graph = _graph(api, ada)
    assert ids["runbooks"] not in {n["id"] for n in graph["nodes"]}
    assert not [e for e in graph["edges"] if ids["runbooks"] in (e["from"], e["to"])]
    # The agent it reached is no longer drawn: nothing attaches to it now.
    assert agents["triage"] not in {n["id"] for n in graph["nodes"]}


def test_an_agent_token_cannot_read_the_map(api: Api) -> None:
    ada, _, _ = build(api)
    helper = api.agent(ada, "helper")
    r = api.get("/memory_map", helper)
    assert r.status_code == 403 and r.json()["error"]["code"] == "not_authorized"


def test_an_agent_that_only_a_deployment_default_reaches_is_drawn(api: Api) -> None:
    # Given a deployment default and an agent of that deployment that no attachment names (issue 26)
    ada, ids, _ = build(api)
    deployed = api.agent(ada, "prod-bot")
    mems = Memories(api)
    assert mems.patch_agent(ada, deployed.public_id, deployment="prod").status_code == 200
    elsewhere = api.agent(ada, "staging-bot")
    assert mems.patch_agent(ada, elsewhere.public_id, deployment="staging").status_code == 200
    # When the map is drawn
    graph = _graph(api, ada)
    nodes = {n["id"]: n for n in graph["nodes"]}
    edges = {(e["from"], e["to"], e["kind"]) for e in graph["edges"]}
    # Then the agent is a node, joined to its deployment's node, which the Memory's default reaches
    assert nodes[deployed.public_id] == {"id": deployed.public_id, "kind": "agent", "name": "prod-bot"}
    assert ("deployment:prod", deployed.public_id, "member") in edges
    assert (ids["prod-notes"], "deployment:prod", "default") in edges
    # And an agent of a deployment no default reaches is not drawn
    assert elsewhere.public_id not in nodes
    # And the page draws it too
    page = api.get("/memory_map.html", ada)
    assert page.status_code == 200 and "prod-bot" in page.text
