"""Reviewing quarantined versions over HTTP (issue 12): curators release or reject a flagged version of a
conversation/ or workspace/ document, never their own; the owner of a private root reviews its own rows.

Release makes the version ordinary (the verdict is kept on it); reject restores the version before it as
a new version, or deletes the document when there is none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest

from ..support import Api, Who, code
from .runs import Run, create, make_run
from .safe_content import (
    INJECTION,
    INJECTION_RULES,
    PROFILE,
    author,
    block,
    memory,
    pair_of,
    pending,
    review,
    rollback,
    sha,
    version,
    versions,
)

PATH = "conversation/odd.md"


@dataclass
class Room:
    """The runs world (Ada created the room, alpha answers, Bob is a member, Vic a viewer) plus Cora, whom
    Ada added as a curator."""

    run: Run
    cora: Who

    @property
    def api(self) -> Api:
        return self.run.api

    def flagged(
        self, who: Who, path: str = PATH, base: str | None = None, expected: Any = (None, None)
    ) -> dict[str, Any]:
        doc = memory(self.api.write(who, base or self.run.base, path, INJECTION, expected))
        assert doc["quarantine"] == pending(INJECTION_RULES)
        return doc


@pytest.fixture
def room(api: Api) -> Room:
    run = make_run(api)
    cora = api.human(run.ada, "cora")
    api.member(run.ada, run.ws, cora, role="curator")
    return Room(run, cora)


def released_by(who: Who, name: str, doc: dict[str, Any]) -> None:
    q = doc["quarantine"]
    assert set(q) == {"status", "rules", "ruleset", "reviewed_by", "reviewed_at"}
    assert (q["status"], q["rules"], q["ruleset"]) == ("released", INJECTION_RULES, pending([])["ruleset"])
    assert q["reviewed_by"] == author(who, name)
    datetime.strptime(q["reviewed_at"], "%Y-%m-%dT%H:%M:%S.%fZ")


# ---- the curator role ---------------------------------------------------------------------------------------


def test_add_member_takes_the_curator_role_and_refuses_owner(api: Api) -> None:
    ada, ws, _ = api.room()
    cora = api.human(ada, "cora")
    url = f"/workspaces/{ws}/members"
    # When Ada adds Cora as a curator
    r = api.post(url, ada, {"member": {"human_public_id": cora.public_id, "role": "curator"}})
    # Then she is one
    assert r.status_code == 201, r.text
    assert r.json()["member"]["role"] == "curator"
    # And "owner" is not a role
    r = api.post(url, ada, {"member": {"human_public_id": cora.public_id, "role": "owner"}})
    assert code(r) == (400, "parameter_invalid")
    assert "curator" in r.json()["error"]["message"]
    # A curator writes like a member does
    assert api.write(cora, f"/workspaces/{ws}/memory", "workspace/c.md", "by cora").status_code == 201


# ---- who may review --------------------------------------------------------------------------------------


def test_the_workspace_creator_is_a_curator_and_releases_a_version_someone_else_wrote(room: Room) -> None:
    api, run = room.api, room.run
    # Given a clean plan and Bob's note that resembles injection, kept out of the block
    memory(api.write(run.ada, run.base, "conversation/plan.md", "Ship on Friday."))
    odd = room.flagged(run.bob)
    assert INJECTION not in block(api, run.ada, run.ws, run.conv)["text"]
    revision = run.revision()

    # When Ada, who created the room, releases it through the conversation's door
    r = review(api, run.ada, run.base, PATH, 0, "release", pair_of(odd))

    # Then it is answered 200 with the document, the same version, now released by her
    doc = memory(r, 200)
    assert (doc["public_id"], doc["lock_version"], doc["content"]) == (odd["public_id"], 0, INJECTION)
    released_by(run.ada, "ada", doc)
    # The version itself records the verdict, in the listing and in its show
    (record,) = versions(api, run.bob, run.base, PATH)
    released_by(run.ada, "ada", record)
    released_by(run.ada, "ada", version(api, run.bob, run.base, PATH, 0))
    assert memory(api.show(run.bob, run.base, PATH), 200)["quarantine"]["status"] == "released"
    # The conversation's next reply changes: the revision moved, and the block now renders it
    assert run.revision() == revision + 1
    b = block(api, run.ada, run.ws, run.conv)
    assert b["context_revision"] == revision + 1
    assert INJECTION in b["text"]
    assert sorted(e["path"] for e in b["included"]) == [PATH, "conversation/plan.md"]
    assert "quarantined" not in b
    # And the model reads it now
    ex = run.execution()
    assert run.ok(ex, "memory_read", path=PATH)["data"]["content"] == INJECTION
    assert "quarantined" not in run.ok(ex, "memory_ls")["content"]


def test_a_curator_added_with_the_role_releases_through_the_workspace_door(room: Room) -> None:
    api, run = room.api, room.run
    path = "workspace/odd.md"
    odd = room.flagged(run.bob, path, run.ws_base)
    revision = run.revision()
    # When Cora releases Bob's workspace note through the workspace's door
    doc = memory(review(api, room.cora, run.ws_base, path, 0, "release", pair_of(odd)), 200)
    # Then it is released by her; the workspace door moves no conversation's revision
    released_by(room.cora, "cora", doc)
    assert run.revision() == revision
    assert INJECTION in block(api, run.ada, run.ws, run.conv)["text"]


def test_the_writer_may_not_review_its_own_version_even_as_a_curator(room: Room) -> None:
    api, run = room.api, room.run
    for who, path in ((run.ada, "conversation/by-ada.md"), (room.cora, "workspace/by-cora.md")):
        odd = room.flagged(who, path)
        for decision in ("release", "reject"):
            # When a curator reviews the version she wrote herself
            r = review(api, who, run.base, path, 0, decision, pair_of(odd))
            # Then it is refused, and the version still waits
            assert code(r) == (403, "not_authorized")
        assert memory(api.show(run.ada, run.base, path), 200)["quarantine"] == pending(INJECTION_RULES)
    # Another curator may: Cora reviews Ada's, Ada reviews Cora's
    ada_doc = memory(api.show(run.ada, run.base, "conversation/by-ada.md"), 200)
    assert review(api, room.cora, run.base, "conversation/by-ada.md", 0, "release", pair_of(ada_doc)).status_code == 200
    cora_doc = memory(api.show(run.ada, run.base, "workspace/by-cora.md"), 200)
    assert review(api, run.ada, run.ws_base, "workspace/by-cora.md", 0, "release", pair_of(cora_doc)).status_code == 200


def test_a_version_written_by_a_curators_own_run_is_hers_to_leave_to_others(room: Room) -> None:
    api, run = room.api, room.run
    # Given a run Ada started herself, whose model writes a note that resembles injection
    ex = run.execution(who=run.ada)
    wrote = run.ok(ex, "memory_write", **create(PATH, INJECTION))
    assert wrote["data"]["written_by"]["public_id"] == run.ada.public_id
    # When Ada reviews it, then she is the writer: refused
    assert code(review(api, run.ada, run.base, PATH, 0, "release", pair_of(wrote["data"]))) == (403, "not_authorized")
    # And Cora may
    assert review(api, room.cora, run.base, PATH, 0, "release", pair_of(wrote["data"])).status_code == 200


def test_members_viewers_agents_and_strangers_may_not_review(room: Room) -> None:
    api, run = room.api, room.run
    odd = room.flagged(room.cora)
    stranger = api.account("other", "sam")
    before = memory(api.show(run.ada, run.base, PATH), 200)
    # A plain member, a viewer and the answering agent (a member too) are refused, either decision
    for who in (run.bob, run.vic, run.alpha):
        for decision in ("release", "reject"):
            r = review(api, who, run.base, PATH, 0, decision, pair_of(odd))
            assert code(r) == (403, "not_authorized"), (who, decision)
    # and so they are on a workspace/ note through the workspace's door
    ws_odd = room.flagged(room.cora, "workspace/odd.md", run.ws_base)
    for who in (run.bob, run.vic):
        r = review(api, who, run.ws_base, "workspace/odd.md", 0, "release", pair_of(ws_odd))
        assert code(r) == (403, "not_authorized")
    # A stranger does not even see the room
    assert code(review(api, stranger, run.base, PATH, 0, "release", pair_of(odd))) == (404, "not_found")
    # And nothing changed
    assert memory(api.show(run.ada, run.base, PATH), 200) == before
    # When Bob is made a curator, he may
    api.member(run.ada, run.ws, run.bob, role="curator")
    released_by(run.bob, "bob", memory(review(api, run.bob, run.base, PATH, 0, "release", pair_of(odd)), 200))


# ---- reject --------------------------------------------------------------------------------------------------


def test_reject_restores_the_previous_version_as_a_new_version(room: Room) -> None:
    api, run = room.api, room.run
    path = "workspace/deploy.md"
    good = "Deploy with `make ship`.\nRoll back with `make unship` — ✅\n"
    # Given Ada's deploy note, replaced by Bob with text that resembles injection
    v0 = memory(api.write(run.ada, run.base, path, good))
    v1 = room.flagged(run.bob, path, expected=pair_of(v0))
    revision = run.revision()

    # When Cora rejects it
    doc = memory(review(api, room.cora, run.base, path, 1, "reject", pair_of(v1)), 200)

    # Then the previous text is back as a new version, byte for byte, by her, and ordinary
    assert (doc["public_id"], doc["lock_version"]) == (v0["public_id"], 2)
    assert doc["content"] == good
    assert doc["content_sha256"] == sha(good) == v0["content_sha256"]
    assert doc["written_by"] == author(room.cora, "cora")
    assert doc["quarantine"] is None
    shown = memory(api.show(run.bob, run.ws_base, path), 200)
    assert (shown["lock_version"], shown["content"]) == (2, good)
    # The versions listing shows it as a rollback from version 0, and the flagged record rejected
    rows = versions(api, run.ada, run.base, path)
    assert [(v["lock_version"], v["operation"], v["rolled_back_from"]) for v in rows] == [
        (2, "rollback", 0),
        (1, "write", None),
        (0, "write", None),
    ]
    assert rows[0]["quarantine"] is None
    flagged = version(api, run.ada, run.base, path, 1)
    assert flagged["quarantine"]["status"] == "rejected"
    assert flagged["quarantine"]["reviewed_by"] == author(room.cora, "cora")
    assert flagged["content"] == INJECTION  # still there for people; redaction is a separate act
    assert rows[1]["quarantine"] == flagged["quarantine"]
    assert version(api, run.ada, run.base, path, 2)["content"] == good
    # The conversation's next reply renders the restored text
    assert run.revision() == revision + 1
    b = block(api, run.ada, run.ws, run.conv)
    assert good in b["text"] and INJECTION not in b["text"]
    assert "quarantined" not in b


def test_reject_with_no_previous_version_deletes_the_document(room: Room) -> None:
    api, run = room.api, room.run
    odd = room.flagged(run.bob)
    revision = run.revision()
    # When Cora rejects a document whose only version is the flagged one
    r = review(api, room.cora, run.base, PATH, 0, "reject", pair_of(odd))
    # Then it is answered 204 and the document is gone
    assert r.status_code == 204, r.text
    assert r.content == b""
    assert code(api.show(run.ada, run.base, PATH)) == (404, "memory_not_found")
    assert PATH not in [m["path"] for m in run.listing()]
    assert run.revision() == revision + 1
    assert "quarantined" not in block(api, run.ada, run.ws, run.conv)
    # And the path is free to be written again
    assert api.write(run.bob, run.base, PATH, "A clean note.").status_code == 201


def test_reject_over_two_flagged_versions_restores_the_earlier_one_still_waiting(room: Room) -> None:
    api, run = room.api, room.run
    # Given two flagged versions in a row
    v0 = room.flagged(run.bob)
    v1 = room.flagged(run.bob, expected=pair_of(v0))
    # When the later one is rejected
    doc = memory(review(api, room.cora, run.base, PATH, 1, "reject", pair_of(v1)), 200)
    # Then the earlier text is back, and it still waits for review: nothing reaches the model unreviewed
    assert doc["quarantine"] == pending(INJECTION_RULES)
    assert run.refused(run.execution(), "memory_read", path=PATH) == "memory_quarantined"


# ---- refusals -------------------------------------------------------------------------------------------------


def test_a_stale_pair_or_an_older_version_is_refused(room: Room) -> None:
    api, run = room.api, room.run
    v0 = room.flagged(run.bob)
    v1 = room.flagged(run.bob, expected=pair_of(v0))
    before = memory(api.show(run.ada, run.base, PATH), 200)
    pid = v1["public_id"]
    for lock_version, expected in (
        (0, pair_of(v0)),  # the pair Ada read before Bob's second write
        (1, pair_of(v0)),  # the current version with a stale pair
        (0, pair_of(v1)),  # an older version with the current pair: only the current version is reviewed
        (1, ("01a00000-0000-7000-8000-000000000000", 1)),  # another document's id
    ):
        r = review(api, room.cora, run.base, PATH, lock_version, "release", expected)
        assert code(r) == (409, "stale_object"), (lock_version, expected)
    # Nothing changed
    assert memory(api.show(run.ada, run.base, PATH), 200) == before
    assert pid == before["public_id"]


def test_a_version_that_is_not_pending_is_validation_failed(room: Room) -> None:
    api, run = room.api, room.run
    # A clean document
    clean = memory(api.write(run.bob, run.base, "conversation/clean.md", "Nothing odd here."))
    assert code(review(api, room.cora, run.base, "conversation/clean.md", 0, "release", pair_of(clean))) == (
        422,
        "validation_failed",
    )
    # A version already released, reviewed again either way
    odd = room.flagged(run.bob)
    assert review(api, room.cora, run.base, PATH, 0, "release", pair_of(odd)).status_code == 200
    for decision in ("release", "reject"):
        r = review(api, room.cora, run.base, PATH, 0, decision, pair_of(odd))
        assert code(r) == (422, "validation_failed")
    assert memory(api.show(run.ada, run.base, PATH), 200)["quarantine"]["status"] == "released"
    # A document that is not there
    assert code(review(api, room.cora, run.base, "conversation/none.md", 0, "release", pair_of(odd))) == (
        404,
        "memory_not_found",
    )


@pytest.mark.parametrize("decision", ["approve", "RELEASE", "", None, 1, ["release"]])
def test_a_decision_other_than_release_or_reject_is_parameter_invalid(room: Room, decision: Any) -> None:
    api, run = room.api, room.run
    odd = room.flagged(run.bob)
    r = review(api, room.cora, run.base, PATH, 0, decision, pair_of(odd))
    assert code(r) == (400, "parameter_invalid")
    assert memory(api.show(run.ada, run.base, PATH), 200)["quarantine"] == pending(INJECTION_RULES)


def test_a_review_without_its_fields_is_refused(room: Room) -> None:
    api, run = room.api, room.run
    odd = room.flagged(run.bob)
    full = {
        "path": PATH,
        "lock_version": 0,
        "decision": "release",
        "expected_public_id": odd["public_id"],
        "expected_lock_version": 0,
    }
    for missing in ("path", "lock_version", "decision", "expected_public_id"):
        body = {k: v for k, v in full.items() if k != missing}
        r = api.post(f"{run.base}/review", room.cora, {"memory": body})
        assert code(r)[0] == 400, (missing, r.text)
    # null/null names no document to review
    r = review(api, room.cora, run.base, PATH, 0, "release", (None, None))
    assert code(r) == (400, "parameter_invalid")


# ---- private roots -----------------------------------------------------------------------------------------------


def test_a_human_reviews_its_own_quarantined_user_rows(room: Room) -> None:
    api, run = room.api, room.run
    # Given Bob's own user/ note that resembles injection (he is a plain member of the room)
    odd = memory(api.write(run.bob, PROFILE, "user/pasted.md", INJECTION))
    assert odd["quarantine"] == pending(INJECTION_RULES)
    # When Bob releases it himself through his profile door
    doc = memory(review(api, run.bob, PROFILE, "user/pasted.md", 0, "release", pair_of(odd)), 200)
    # Then it is released by him
    released_by(run.bob, "bob", doc)
    assert versions(api, run.bob, PROFILE, "user/pasted.md")[0]["quarantine"]["status"] == "released"
    # And another user's own note is his alone to reject: it is deleted, having no earlier version
    mine = memory(api.write(room.cora, PROFILE, "user/pasted.md", INJECTION))
    assert review(api, room.cora, PROFILE, "user/pasted.md", 0, "reject", pair_of(mine)).status_code == 204
    assert code(api.show(room.cora, PROFILE, "user/pasted.md")) == (404, "memory_not_found")
    assert memory(api.show(run.bob, PROFILE, "user/pasted.md"), 200)["quarantine"]["status"] == "released"


def test_the_agent_and_its_steward_review_its_agent_rows(room: Room) -> None:
    api, run = room.api, room.run
    # Given the answering agent's model writing an agent/ note that resembles injection
    ex = run.execution()
    wrote = run.ok(ex, "memory_write", **create("agent/pasted.md", INJECTION))
    assert wrote["data"]["quarantine"] == pending(INJECTION_RULES)
    # A curator who does not steward the agent cannot reach its rows
    r = review(api, room.cora, run.base, "agent/pasted.md", 0, "release", pair_of(wrote["data"]))
    assert code(r) == (422, "memory_scope_unavailable")
    # When Ada, its steward, releases it through the conversation's door
    doc = memory(review(api, run.ada, run.base, "agent/pasted.md", 0, "release", pair_of(wrote["data"])), 200)
    # Then it is released, and the model reads it again
    released_by(run.ada, "ada", doc)
    assert run.ok(ex, "memory_read", path="agent/pasted.md")["data"]["content"] == INJECTION
    # And the agent reviews its own rows through its profile door, its own writes included
    own = memory(api.write(run.alpha, PROFILE, "agent/own.md", INJECTION))
    released_by(
        run.alpha, "alpha", memory(review(api, run.alpha, PROFILE, "agent/own.md", 0, "release", pair_of(own)), 200)
    )


def test_a_rollback_to_a_released_version_stays_released(room: Room) -> None:
    api, run = room.api, room.run
    # Given a released flagged version, then a clean one over it
    odd = room.flagged(run.bob)
    memory(review(api, room.cora, run.base, PATH, 0, "release", pair_of(odd)), 200)
    v1 = memory(api.write(run.bob, run.base, PATH, "Clean.", pair_of(odd)))
    # When Bob rolls back to the released version
    back = memory(rollback(api, run.bob, run.base, PATH, 0, pair_of(v1)))
    # Then the restored text keeps its release: it reaches the model without another review
    assert back["quarantine"]["status"] == "released"
    assert INJECTION in block(api, run.ada, run.ws, run.conv)["text"]
