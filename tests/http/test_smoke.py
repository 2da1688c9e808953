from __future__ import annotations

from ..support import Api, conv_base, pair


def test_write_show_edit_delete_round_trip(api: Api) -> None:
    # Given a human with a workspace and a conversation
    ada = api.account()
    ws = api.workspace(ada)
    conv = api.conversation(ada, ws)
    base = conv_base(ws, conv)
    # When a document is created, edited and shown
    created = api.write(ada, base, "conversation/plan.md", "ship friday")
    assert created.status_code == 201
    edited = api.edit(ada, base, "conversation/plan.md", "friday", "monday", pair(created))
    assert edited.status_code == 200, edited.text
    shown = api.show(ada, base, "conversation/plan.md").json()["memory"]
    # Then the content and version moved together, and every write bumped the revision
    assert shown["content"] == "ship monday"
    assert shown["lock_version"] == 1
    assert api.show_conversation(ada, ws, conv)["context_revision"] == 2
    assert api.delete(ada, base, "conversation/plan.md", pair(edited)).status_code == 204
    assert api.show(ada, base, "conversation/plan.md").status_code == 404


def test_an_unknown_route_answers_the_error_envelope(api: Api) -> None:
    # When a request names no route of the contract: a wrong path, with or without a token
    ada = api.account()
    for r in (api.get("/no/such/route"), api.post("/workspaces/nope/colors", ada, json={"x": 1})):
        # Then it is 404 not_found in the same envelope as every refusal, pointing at the route list
        assert r.status_code == 404, r.text
        assert r.headers["content-type"] == "application/json"
        assert set(r.json()) == {"error"} and set(r.json()["error"]) == {"code", "message"}
        assert r.json()["error"]["code"] == "not_found"
        assert "GET /agent_api/v1/openapi.json" in r.json()["error"]["message"]
    # And a known path sent with a method it does not answer is told the one it does
    wrong = api.call("DELETE", "/accounts")
    assert wrong.status_code == 404 and wrong.json()["error"]["code"] == "not_found"
    assert "send POST instead" in wrong.json()["error"]["message"]
