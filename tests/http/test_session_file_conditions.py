"""An execution's file changes without the condition pair are 400 `parameter_missing` (issue 26, item 8).

The seed's conditional-write rule holds at every door: a write, edit, delete or rename names the version it
read (`expected_public_id` and `expected_lock_version`), null and null meaning "create only if absent". A
body that leaves them out is a missing parameter, not a stale object, and changes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..support import Api, Who, code, conv_base, created

pytestmark = pytest.mark.http

NEW = {"expected_public_id": None, "expected_lock_version": None}


def session(api: Api) -> tuple[Who, Who, str, str, str]:
    """(ada, alpha, workspace, conversation, execution): alpha answers the conversation and runs the session."""
    ada = api.account()
    ws = api.workspace(ada)
    alpha = api.agent(ada, "alpha")
    api.member(ada, ws, alpha)
    conv = api.conversation(ada, ws, answering_agent_public_id=alpha.public_id)
    r = api.post(f"/workspaces/{ws}/conversations/{conv}/executions", alpha, {"execution": {}})
    assert r.status_code == 201, r.text
    return ada, alpha, ws, conv, r.json()["execution"]["public_id"]


def test_a_change_without_the_pair_is_parameter_missing_and_changes_nothing(api: Api) -> None:
    ada, alpha, ws, conv, ex = session(api)
    doc = created(api.write(ada, conv_base(ws, conv), "conversation/plan.md", "ship friday"))
    pair = {"expected_public_id": doc[0], "expected_lock_version": doc[1]}
    base: dict[str, dict[str, Any]] = {
        "write": {"path": "conversation/plan.md", "content": "overwritten"},
        "edit": {"path": "conversation/plan.md", "old_text": "friday", "new_text": "monday"},
        "delete": {"path": "conversation/plan.md"},
        "rename": {"path": "conversation/plan.md", "new_path": "conversation/moved.md"},
    }
    tried = 0
    for verb, body in base.items():
        for missing in (
            ("expected_public_id", "expected_lock_version"),
            ("expected_public_id",),
            ("expected_lock_version",),
        ):
            sent = {**body, **{k: v for k, v in pair.items() if k not in missing}}
            r = api.post(f"/executions/{ex}/files/{verb}", alpha, {"file": sent})
            tried += 1
            assert code(r) == (400, "parameter_missing"), (verb, missing, r.text)
            assert any(k in r.json()["error"]["message"] for k in missing), r.text
        # A new path without the pair is no create either
        fresh = {**body, "path": "conversation/fresh.md"}
        assert code(api.post(f"/executions/{ex}/files/{verb}", alpha, {"file": fresh})) == (400, "parameter_missing")
        tried += 1
    assert tried == 16
    shown = api.post(f"/executions/{ex}/files/show", alpha, {"file": {"path": "conversation/plan.md"}})
    assert shown.status_code == 200 and shown.json()["file"]["content"] == "ship friday"
    assert (shown.json()["file"]["public_id"], shown.json()["file"]["lock_version"]) == doc
    fresh_show = api.post(f"/executions/{ex}/files/show", alpha, {"file": {"path": "conversation/fresh.md"}})
    assert code(fresh_show)[0] == 404


def test_the_pair_sent_keeps_working(api: Api) -> None:
    _, alpha, _, _, ex = session(api)
    r = api.post(f"/executions/{ex}/files/write", alpha, {"file": {"path": "conversation/a.md", "content": "a", **NEW}})
    assert r.status_code == 201, r.text
    f = r.json()["file"]
    pair = {"expected_public_id": f["public_id"], "expected_lock_version": f["lock_version"]}
    r = api.post(
        f"/executions/{ex}/files/edit",
        alpha,
        {"file": {"path": "conversation/a.md", "old_text": "a", "new_text": "b", **pair}},
    )
    assert r.status_code == 200, r.text
    f = r.json()["file"]
    pair = {"expected_public_id": f["public_id"], "expected_lock_version": f["lock_version"]}
    # A stale pair is still what it was: 409
    stale = {**pair, "expected_lock_version": 0}
    assert code(
        api.post(f"/executions/{ex}/files/delete", alpha, {"file": {"path": "conversation/a.md", **stale}})
    ) == (
        409,
        "stale_object",
    )
    r = api.post(f"/executions/{ex}/files/delete", alpha, {"file": {"path": "conversation/a.md", **pair}})
    assert r.status_code == 204, r.text
