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


def test_an_unknown_route_is_answered_as_api_gateway_answers_it(api: Api) -> None:
    # When a request names no route of the contract (a wrong path, or a known path with another method)
    unknown = api.get("/no/such/route")
    wrong_method = api.call("DELETE", "/accounts")
    # Then the gateway itself answers 404 with API Gateway's own body, before any function runs
    for r in (unknown, wrong_method):
        assert r.status_code == 404
        assert r.json() == {"message": "Not Found"}
